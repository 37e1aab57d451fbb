package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
)

// DiscoverMachineInput identifies the onboarding.
type DiscoverMachineInput struct {
	OnboardingRef
}

// DiscoverMachineOutput says which machine the onboarding drives and how
// it was found.
type DiscoverMachineOutput struct {
	SystemID   string `json:"system_id"`
	Action     string `json:"action"`
	Rule       string `json:"rule"`
	StatusName string `json:"status_name"`
	Claimed    bool   `json:"claimed"`
}

// DiscoverMachine finds or creates the onboarding's MAAS machine (requirements readiness
// §4.1): it looks the host up by hostname, by power address (the IPMI IP)
// and, when an earlier attempt observed one, by PXE MAC, and lets
// domain.DecideDiscovery decide. Only reads reach MAAS unless the decision
// is to create: ambiguity, a New machine that may not be claimed and an
// unsafe status all fail with nothing changed in MAAS. Creating uses the
// site's IPMI credentials, power_type ipmi, the profile's architecture (so
// MAAS keeps a MAC, maas-behaviour §14.9), the PXE MAC when an earlier attempt
// observed one, and commission=false, so that commissioning runs next with
// the policy's flags.
//
// Repeat: a retry after a create whose answer was lost finds the New
// machine by hostname and power address and recognises it by the
// create-requested timeline marker, so it never creates twice.
//
// Errors: AmbiguousMachineMatchError, MachineClaimNotAllowedError,
// MachineStateUnsafeError (manual intervention); MAAS errors.
func (a *Activities) DiscoverMachine(ctx context.Context, in DiscoverMachineInput) (out DiscoverMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "DiscoverMachine", domain.StageDiscover, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	pol, profile, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, err := c.maas(ctx)
	if err != nil {
		return out, err
	}

	mac, err := c.knownPXEMAC(ctx)
	if err != nil {
		return out, err
	}
	in2 := domain.DiscoveryInput{
		Hostname:     c.Rec.Hostname,
		PXEMACKnown:  mac != "",
		AutoClaimNew: pol.AutoClaimNew,
		OwnSystemID:  c.Rec.MAASSystemID,
	}
	byHost, err := client.FindByHostname(ctx, c.Rec.Hostname)
	if err != nil {
		return out, err
	}
	in2.ByHostname = candidates(byHost)
	byPower, err := client.FindByPowerAddress(ctx, c.Rec.IPMIIP)
	if err != nil {
		return out, err
	}
	in2.ByPowerAddress = candidates(byPower)
	if in2.PXEMACKnown {
		byMAC, err := client.FindByMAC(ctx, mac)
		if err != nil {
			return out, err
		}
		in2.ByPXEMAC = candidates(byMAC)
	}
	if in2.CreateRequested, err = c.createRequested(ctx); err != nil {
		return out, err
	}

	d := domain.DecideDiscovery(in2)
	c.Log.InfoContext(ctx, "discovery decided", slog.String("action", d.Action), slog.String("rule", d.Rule),
		slog.String("candidate", d.Machine.SystemID), slog.String("reason", d.Reason))
	// Stored with the create marker, the machine's record or the failure.
	c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: sourceDiscovery, Detail: fmt.Sprintf("%s by %s: %s", d.Action, d.Rule, d.Reason)})

	switch d.Action {
	case domain.DiscoveryAmbiguous:
		return out, &AmbiguousMachineMatchError{Rule: d.Rule, SystemIDs: d.Candidates, Reason: d.Reason}
	case domain.DiscoveryClaimNotAllowed:
		return out, &MachineClaimNotAllowedError{SystemID: d.Machine.SystemID, Rule: d.Rule}
	case domain.DiscoveryUnsafe:
		return out, &activities.MachineStateUnsafeError{SystemID: d.Machine.SystemID, Status: d.Machine.StatusName, Reason: d.Reason}
	}

	m := maas.Machine{SystemID: d.Machine.SystemID, StatusName: d.Machine.StatusName}
	if d.Action == domain.DiscoveryCreate {
		if m, err = c.createMachine(ctx, client, profile); err != nil {
			return out, err
		}
	}
	if err := c.recordMachine(ctx, m.SystemID); err != nil {
		return out, err
	}
	if err := c.Exit(ctx, fmt.Sprintf("machine %s (%s) %s by %s", m.SystemID, activities.MachineStatusName(m), d.Action, d.Rule)); err != nil {
		return out, err
	}
	return DiscoverMachineOutput{SystemID: m.SystemID, Action: d.Action, Rule: d.Rule, StatusName: activities.MachineStatusName(m), Claimed: d.Claimed}, nil
}

func candidates(ms []maas.Machine) []domain.MachineCandidate {
	out := make([]domain.MachineCandidate, len(ms))
	for i, m := range ms {
		out[i] = domain.MachineCandidate{SystemID: m.SystemID, Hostname: m.Hostname, StatusName: activities.MachineStatusName(m)}
	}
	return out
}

// createRequested reports whether this onboarding sent a MAAS create before.
func (c *call) createRequested(ctx context.Context) (bool, error) {
	rows, err := c.a.d.Store.ListOnboardingEvents(ctx, c.ref.OnboardingID)
	if err != nil {
		return false, activities.StoreError("read timeline", err)
	}
	for _, r := range rows {
		if r.Kind == domain.TimelineNote && r.Source == sourceCreateRequested {
			return true, nil
		}
	}
	return false, nil
}

// createMachine creates the machine with the site's IPMI credentials. The
// create-requested marker is written first, so a retry after a lost answer
// adopts what this call created.
func (c *call) createMachine(ctx context.Context, client activities.MAAS, profile domain.Profile) (maas.Machine, error) {
	creds, err := c.powerCredentials(ctx)
	if err != nil {
		return maas.Machine{}, err
	}
	if err := c.Note(ctx, sourceCreateRequested, fmt.Sprintf("creating machine %s with power address %s", c.Rec.Hostname, c.Rec.IPMIIP)); err != nil {
		return maas.Machine{}, err
	}
	p := maas.MachineCreateParams{
		Hostname:     c.Rec.Hostname,
		PowerType:    "ipmi",
		PowerAddress: c.Rec.IPMIIP,
		PowerUser:    creds.Username,
		PowerPass:    creds.Password,
		// With power_type=ipmi MAAS drops the MACs unless an architecture is
		// given (maas-behaviour §14.9); the profile's is always sent.
		Architecture: profile.Architecture,
		// commission=false: CommissionMachine commissions next, with the
		// policy's enable_ssh and skip_bmc_config.
		Commission: false,
	}
	if c.Rec.PXEMAC != "" {
		p.MACAddresses = []string{strings.ToLower(c.Rec.PXEMAC)}
	}
	m, err := client.Create(ctx, p)
	if err != nil {
		return maas.Machine{}, err
	}
	c.Log.InfoContext(ctx, "machine created", slog.String(logfield.MAASSystemID, m.SystemID))
	return m, nil
}

// recordMachine stores the machine on the onboarding and its node, and
// with it the discovered checkpoint (domain.CheckpointDiscovered).
func (c *call) recordMachine(ctx context.Context, systemID string) error {
	if c.Rec.MAASSystemID != systemID || c.Rec.Checkpoint != domain.CheckpointDiscovered {
		if err := c.update(ctx, func(o *domain.Onboarding) error {
			o.MAASSystemID = systemID
			o.Checkpoint = domain.CheckpointDiscovered
			return nil
		}); err != nil {
			return err
		}
	}
	if c.Rec.NodeID == "" {
		return nil
	}
	_, err := c.a.d.Store.UpdateNode(ctx, c.Rec.NodeID, func(n *domain.Node) error {
		n.MAASSystemID = systemID
		if n.OnboardingID == "" {
			n.OnboardingID = c.Rec.ID
		}
		return nil
	})
	return activities.StoreError("record machine on node", err)
}

// knownPXEMAC is the boot MAC observed on an earlier attempt: the
// onboarding's own, else the one kept on its node by an earlier onboarding
// of the same node. Empty when none was observed.
func (c *call) knownPXEMAC(ctx context.Context) (string, error) {
	if c.Rec.PXEMAC != "" || c.Rec.NodeID == "" {
		return c.Rec.PXEMAC, nil
	}
	n, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		var nf *activities.RecordNotFoundError
		if errors.As(activities.StoreError("", err), &nf) {
			return "", nil
		}
		return "", activities.StoreError("read node", err)
	}
	return n.PXEMAC, nil
}
