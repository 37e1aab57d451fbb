package api

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
)

// Answers name the site and profile they refer to (site_name,
// profile_name) beside their ids, so that an operator reads names where
// input accepts names. A name is a decoration: when its record cannot be
// read the answer leaves it out rather than failing.

// namer resolves ids to names for one answer, reading each record once.
type namer struct {
	s        *server
	ctx      context.Context
	sites    map[string]string
	profiles map[[2]string]string
}

func (s *server) namer(ctx context.Context) *namer {
	return &namer{s: s, ctx: ctx, sites: map[string]string{}, profiles: map[[2]string]string{}}
}

// site is the name of the site id, "" when unknown.
func (n *namer) site(id string) string {
	if id == "" {
		return ""
	}
	if name, ok := n.sites[id]; ok {
		return name
	}
	name := ""
	if st, err := n.s.store.GetSite(n.ctx, id); err == nil {
		name = st.Name
	}
	n.sites[id] = name
	return name
}

// profile is the name of the site's profile id, "" when unknown.
func (n *namer) profile(siteID, id string) string {
	if siteID == "" || id == "" {
		return ""
	}
	k := [2]string{siteID, id}
	if name, ok := n.profiles[k]; ok {
		return name
	}
	name := ""
	if p, err := n.s.store.GetProfile(n.ctx, siteID, id); err == nil {
		name = p.Name
	}
	n.profiles[k] = name
	return name
}

// namedOnboarding is an onboarding as lists answer it.
type namedOnboarding struct {
	domain.Onboarding
	SiteName    string `json:"site_name,omitempty"`
	ProfileName string `json:"profile_name,omitempty"`
}

func (n *namer) onboardings(obs []domain.Onboarding) []namedOnboarding {
	out := make([]namedOnboarding, 0, len(obs))
	for _, o := range obs {
		out = append(out, namedOnboarding{Onboarding: o, SiteName: n.site(o.SiteID), ProfileName: n.profile(o.SiteID, o.ProfileID)})
	}
	return out
}

// namedDecommission is a decommission as lists answer it.
type namedDecommission struct {
	domain.Decommission
	SiteName string `json:"site_name,omitempty"`
}

// namedNode is a node as lists answer it.
type namedNode struct {
	domain.Node
	SiteName string `json:"site_name,omitempty"`
}
