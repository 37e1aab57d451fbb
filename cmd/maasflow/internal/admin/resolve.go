package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/google/uuid"
)

// Commands take a site or a profile by id or by name, and an onboarding by
// id or by host name. An id (a UUID, as the API makes them) is used as it
// is, without a request; anything else is looked up, and a name that
// matches nothing is an error, never an empty answer.

// adminRefNotFoundError is a name or id that matches no record.
type adminRefNotFoundError struct {
	Kind, Ref, Hint string
}

func (e *adminRefNotFoundError) Error() string {
	return fmt.Sprintf("not_found: no %s has the id or name %q; %s", e.Kind, e.Ref, e.Hint)
}

// adminAmbiguousRefError is a name that several records carry.
type adminAmbiguousRefError struct {
	Kind, Ref string
	IDs       []string
}

func (e *adminAmbiguousRefError) Error() string {
	return fmt.Sprintf("%q names %d %ss (%s); give the id", e.Ref, len(e.IDs), e.Kind, strings.Join(e.IDs, ", "))
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// adminNamed is the part of a site or profile a lookup reads.
type adminNamed struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// pick finds ref among items: an exact id first, else an exact name.
func pick(kind, ref, hint string, items []adminNamed) (string, error) {
	var byName []string
	for _, it := range items {
		if it.ID == ref {
			return it.ID, nil
		}
		if it.Name == ref {
			byName = append(byName, it.ID)
		}
	}
	switch len(byName) {
	case 0:
		return "", &adminRefNotFoundError{Kind: kind, Ref: ref, Hint: hint}
	case 1:
		return byName[0], nil
	default:
		sort.Strings(byName)
		return "", &adminAmbiguousRefError{Kind: kind, Ref: ref, IDs: byName}
	}
}

func (c *adminClient) listNamed(ctx context.Context, path string) ([]adminNamed, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	var l struct {
		Items []adminNamed `json:"items"`
	}
	if err := resp.decode(&l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// siteID resolves a site id or name.
func (r *adminRun) siteID(ctx context.Context, c *adminClient, ref string) (string, error) {
	if isUUID(ref) {
		return ref, nil
	}
	items, err := c.listNamed(ctx, adminSitesPath)
	if err != nil {
		return "", err
	}
	return pick("site", ref, "list them with: maasflow sites list", items)
}

// profileID resolves a profile id or name within a site.
func (r *adminRun) profileID(ctx context.Context, c *adminClient, site, ref string) (string, error) {
	if isUUID(ref) {
		return ref, nil
	}
	items, err := c.listNamed(ctx, profilesPath(site))
	if err != nil {
		return "", err
	}
	return pick("profile", ref, "list them with: maasflow profiles list "+site, items)
}

// onboardingID resolves an onboarding id, or a host name to the host's
// newest onboarding. A host name known on several sites is ambiguous; a
// ref no host carries is passed on as an id.
func (r *adminRun) onboardingID(ctx context.Context, c *adminClient, ref string) (string, error) {
	if isUUID(ref) {
		return ref, nil
	}
	resp, err := c.do(ctx, http.MethodGet, adminOnboardingsPath, url.Values{"hostname": {ref}, "limit": {"50"}}, nil)
	if err != nil {
		// Not a valid host name: it can only be an id, which the API
		// reports as not found when it is none.
		if apiE, ok := err.(*adminAPIError); ok && apiE.Status == http.StatusBadRequest { //nolint:errorlint // do returns it unwrapped
			return ref, nil
		}
		return "", err
	}
	var page struct {
		Items []struct {
			ID     string `json:"id"`
			SiteID string `json:"site_id"`
		} `json:"items"`
	}
	if err := resp.decode(&page); err != nil {
		return "", err
	}
	if len(page.Items) == 0 {
		// No host of that name: take it as an id; the API answers
		// not_found when it is none.
		return ref, nil
	}
	sites := map[string]bool{}
	var newest []string
	for _, o := range page.Items {
		if !sites[o.SiteID] {
			sites[o.SiteID] = true
			newest = append(newest, o.ID)
		}
	}
	if len(newest) > 1 {
		return "", &adminAmbiguousRefError{Kind: "onboarding", Ref: ref, IDs: newest}
	}
	return page.Items[0].ID, nil
}

// completeSites proposes site names for shell completion; the API is asked
// with the operator's environment, and any failure proposes nothing.
func completeSites(r *adminRun, _ []string) []string {
	c, err := r.client()
	if err != nil {
		return nil
	}
	items, err := c.listNamed(completionContext(r), adminSitesPath)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		names = append(names, it.Name)
	}
	return names
}

// completeSiteProfiles proposes site names, then the site's profile names.
func completeSiteProfiles(r *adminRun, args []string) []string {
	if len(args) == 0 {
		return completeSites(r, args)
	}
	c, err := r.client()
	if err != nil {
		return nil
	}
	site, err := r.siteID(completionContext(r), c, args[0])
	if err != nil {
		return nil
	}
	items, err := c.listNamed(completionContext(r), profilesPath(site))
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		names = append(names, it.Name)
	}
	return names
}

func completionContext(r *adminRun) context.Context {
	if ctx := r.cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
