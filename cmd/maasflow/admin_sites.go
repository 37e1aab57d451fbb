package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// adminSiteView is a site as GET …/maas-sites/{id} shows it.
type adminSiteView struct {
	ID              string                     `json:"id"`
	Name            string                     `json:"name"`
	MAASURL         string                     `json:"maas_url"`
	Description     string                     `json:"description"`
	Status          string                     `json:"status"`
	Policy          map[string]json.RawMessage `json:"policy"`
	CredentialsSet  bool                       `json:"credentials_set"`
	Probe           *domain.ProbeResult        `json:"probe"`
	CreatedAt       time.Time                  `json:"created_at"`
	UpdatedAt       time.Time                  `json:"updated_at"`
	EffectivePolicy map[string]json.RawMessage `json:"effective_policy"`
}

// adminProfileView is a profile as GET …/profiles/{profile_id} shows it.
type adminProfileView struct {
	ID              string                     `json:"id"`
	SiteID          string                     `json:"site_id"`
	Name            string                     `json:"name"`
	Architecture    string                     `json:"architecture"`
	DistroSeries    string                     `json:"distro_series"`
	HWEKernel       string                     `json:"hwe_kernel"`
	Status          string                     `json:"status"`
	Policy          map[string]json.RawMessage `json:"policy"`
	CreatedAt       time.Time                  `json:"created_at"`
	UpdatedAt       time.Time                  `json:"updated_at"`
	EffectivePolicy map[string]json.RawMessage `json:"effective_policy"`
}

// policyFlag checks --policy-json: one JSON object, sent as given so that
// the API names any unknown or invalid field.
func policyFlag(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, usagef(`--policy-json must be one JSON object, e.g. '{"auto_claim_new":true}'`)
	}
	return json.RawMessage(b), nil
}

func statusFlag(s string) error {
	if s != domain.StatusActive && s != domain.StatusDisabled {
		return usagef("--status must be %q or %q", domain.StatusActive, domain.StatusDisabled)
	}
	return nil
}

// parseBody parses a command that takes ids positional arguments and sends
// the string flags named in flags as its body (see bodyFromFlags); the
// required flags must be given.
func (r *adminRun) parseBody(args []string, ids int, flags []string, required ...string) ([]string, map[string]any, error) {
	fs := r.flags()
	vals := make(map[string]*string, len(flags))
	for _, n := range flags {
		vals[n] = fs.String(n, "", "")
	}
	pos, err := r.parse(fs, args, ids)
	if err != nil {
		return nil, nil, err
	}
	if err := requireFlags(fs, required...); err != nil {
		return nil, nil, err
	}
	body, err := bodyFromFlags(fs, vals)
	if err != nil {
		return nil, nil, err
	}
	return pos, body, nil
}

// parsePatch is parseBody for a PATCH, which must change something.
func (r *adminRun) parsePatch(args []string, ids int, flags ...string) ([]string, map[string]any, error) {
	pos, body, err := r.parseBody(args, ids, flags)
	if err == nil && len(body) == 0 {
		err = usagef("nothing to change: give at least one of --%s", strings.Join(flags, ", --"))
	}
	return pos, body, err
}

// bodyFromFlags copies the given string flags into a request body, under
// their snake_case names; policy-json becomes "policy".
func bodyFromFlags(fs *flag.FlagSet, vals map[string]*string) (map[string]any, error) {
	set := flagsSet(fs)
	body := map[string]any{}
	for name, v := range vals {
		if !set[name] {
			continue
		}
		switch name {
		case "policy-json":
			p, err := policyFlag(*v)
			if err != nil {
				return nil, err
			}
			body["policy"] = p
		case "status":
			if err := statusFlag(*v); err != nil {
				return nil, err
			}
			body["status"] = *v
		default:
			body[strings.ReplaceAll(name, "-", "_")] = *v
		}
	}
	return body, nil
}

// call runs the common tail of a command: the request, then either the
// verbatim JSON or the human form printed by human.
func (r *adminRun) call(ctx context.Context, method, path string, body any, human func(*adminResponse) error) int {
	return r.callQuery(ctx, method, path, nil, body, human)
}

// callQuery is call with a query string.
func (r *adminRun) callQuery(ctx context.Context, method, path string, query url.Values, body any, human func(*adminResponse) error) int {
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	resp, err := c.do(ctx, method, path, query, body)
	if err != nil {
		return r.fail(err)
	}
	if r.json() {
		r.emit(resp.Body)
		return adminExitOK
	}
	if err := human(resp); err != nil {
		return r.fail(err)
	}
	return adminExitOK
}

func (r *adminRun) printSite(resp *adminResponse) error {
	var s adminSiteView
	if err := resp.decode(&s); err != nil {
		return err
	}
	w := r.env.stdout
	f := newAdminFields(w)
	f.add("ID", s.ID)
	f.add("Name", s.Name)
	f.add("Status", s.Status)
	f.add("MAAS URL", s.MAASURL)
	f.add("Description", s.Description)
	f.add("Credentials", map[bool]string{true: "set", false: "not set"}[s.CredentialsSet])
	f.add("Probe", probeSummary(s.Probe))
	f.add("Created", adminTime(s.CreatedAt))
	f.add("Updated", adminTime(s.UpdatedAt))
	f.flush()
	printPolicies(w, "site", s.Policy, s.EffectivePolicy)
	return nil
}

func probeSummary(p *domain.ProbeResult) string {
	switch {
	case p == nil:
		return "not probed since the URL or credentials last changed"
	case p.Healthy:
		return fmt.Sprintf("healthy (MAAS %s, checked %s)", orDash(p.Version), adminTime(p.CheckedAt))
	default:
		return fmt.Sprintf("unhealthy: %s (checked %s)", p.Error, adminTime(p.CheckedAt))
	}
}

func printPolicies(w io.Writer, owner string, own, effective map[string]json.RawMessage) {
	if len(own) == 0 {
		fmt.Fprintf(w, "\nPolicy set on this %s: none (everything inherited)\n", owner)
	} else {
		fmt.Fprintf(w, "\nPolicy set on this %s:\n", owner)
		adminPolicyLines(w, own)
	}
	fmt.Fprintln(w, "\nEffective policy:")
	adminPolicyLines(w, effective)
}

func runSitesCreate(ctx context.Context, r *adminRun, args []string) int {
	_, body, err := r.parseBody(args, 0, []string{"name", "maas-url", "description", "policy-json"}, "name", "maas-url")
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodPost, adminSitesPath, body, r.printSite)
}

func runSitesList(ctx context.Context, r *adminRun, args []string) int {
	if _, err := r.parse(r.flags(), args, 0); err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminSitesPath, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminSiteView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "ID", "NAME", "STATUS", "MAAS_URL", "CREDENTIALS", "PROBE")
		for _, s := range l.Items {
			probe := "never"
			if s.Probe != nil {
				probe = map[bool]string{true: "healthy", false: "unhealthy"}[s.Probe.Healthy]
			}
			t.row(s.ID, s.Name, s.Status, s.MAASURL, map[bool]string{true: "set", false: "not set"}[s.CredentialsSet], probe)
		}
		t.flush()
		return nil
	})
}

func runSitesGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, adminPath(adminSitesPath, pos[0]), nil, r.printSite)
}

func runSitesPatch(ctx context.Context, r *adminRun, args []string) int {
	pos, body, err := r.parsePatch(args, 1, "name", "maas-url", "description", "status", "policy-json")
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodPatch, adminPath(adminSitesPath, pos[0]), body, r.printSite)
}

func runSitesDisable(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodDelete, adminPath(adminSitesPath, pos[0]), nil, r.printSite)
}

// Credential sources: stdin JSON, or these variables. Never flags.
const (
	envMAASAPIKey  = "MAAS_API_KEY"
	envBMCUsername = "BMC_USERNAME"
	envBMCPassword = "BMC_PASSWORD"
	// adminMaxCredentials bounds what is read from stdin.
	adminMaxCredentials = 64 << 10
)

// adminCredentials is the body of POST …/credentials. It is sent and then
// dropped: never printed, never part of an error message.
type adminCredentials struct {
	MAASAPIKey  string `json:"maas_api_key"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

// readCredentials takes the credentials from the environment when any of
// the three variables is set, else from stdin as one JSON object. Error
// messages name fields and variables, never values: encoding/json's own
// messages can quote the input, so they are not passed on.
func (r *adminRun) readCredentials() (adminCredentials, error) {
	env := map[string]string{}
	for _, k := range []string{envMAASAPIKey, envBMCUsername, envBMCPassword} {
		if v := r.env.getenv(k); v != "" {
			env[k] = v
		}
	}
	var c adminCredentials
	if len(env) > 0 {
		c = adminCredentials{MAASAPIKey: env[envMAASAPIKey], BMCUsername: env[envBMCUsername], BMCPassword: env[envBMCPassword]}
		for _, k := range []string{envMAASAPIKey, envBMCUsername, envBMCPassword} {
			if env[k] == "" {
				return adminCredentials{}, usagef("$%s is not set (credentials from the environment need %s, %s and %s)", k, envMAASAPIKey, envBMCUsername, envBMCPassword)
			}
		}
		return c, nil
	}
	if r.env.stdinTTY {
		return adminCredentials{}, usagef(`stdin is a terminal: pipe the credentials in as JSON ({"maas_api_key","bmc_username","bmc_password"}) or set %s, %s and %s`, envMAASAPIKey, envBMCUsername, envBMCPassword)
	}
	b, err := io.ReadAll(io.LimitReader(r.env.stdin, adminMaxCredentials+1))
	if err != nil {
		return adminCredentials{}, errors.New("credentials: cannot read stdin")
	}
	if len(b) > adminMaxCredentials {
		return adminCredentials{}, usagef("credentials on stdin: larger than %d bytes", adminMaxCredentials)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return adminCredentials{}, usagef(`credentials on stdin: not one JSON object {"maas_api_key","bmc_username","bmc_password"} (unknown field, wrong type or invalid JSON)`)
	}
	if dec.More() {
		return adminCredentials{}, usagef("credentials on stdin: unexpected data after the JSON object")
	}
	for _, f := range []struct{ name, v string }{{"maas_api_key", c.MAASAPIKey}, {"bmc_username", c.BMCUsername}, {"bmc_password", c.BMCPassword}} {
		if f.v == "" {
			return adminCredentials{}, usagef("credentials on stdin: %s is missing or empty", f.name)
		}
	}
	return c, nil
}

func runSitesCredentials(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	creds, err := r.readCredentials()
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodPost, adminPath(adminSitesPath, pos[0], "credentials"), creds, func(resp *adminResponse) error {
		var s adminSiteView
		if err := resp.decode(&s); err != nil {
			return err
		}
		fmt.Fprintf(r.env.stdout, "credentials stored for site %s; check them with: maasflow sites probe %s\n", adminCell(s.ID), adminCell(s.ID))
		return nil
	})
}

// adminProbeView is the answer of POST …/probe.
type adminProbeView struct {
	SiteID string `json:"site_id"`
	domain.ProbeResult
}

func runSitesProbe(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	c, err := r.client()
	if err != nil {
		return r.fail(err)
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminSitesPath, pos[0], "probe"), nil, nil)
	if err != nil {
		return r.fail(err)
	}
	var p adminProbeView
	if err := resp.decode(&p); err != nil {
		return r.fail(err)
	}
	if r.json() {
		r.emit(resp.Body)
	} else {
		f := newAdminFields(r.env.stdout)
		f.add("Site", p.SiteID)
		f.add("Healthy", fmt.Sprint(p.Healthy))
		if p.Healthy {
			f.add("MAAS version", p.Version)
			f.add("Capabilities", strings.Join(p.Capabilities, ", "))
			user := p.User
			if p.IsAdmin {
				user += " (admin)"
			}
			f.add("User", user)
		} else {
			f.add("Error", p.Error)
		}
		f.add("Checked", adminTime(p.CheckedAt))
		f.flush()
	}
	// A failed probe is an answer, not an API error, but scripts gate on
	// it (onboardings are refused until a probe is healthy).
	if !p.Healthy {
		return adminExitError
	}
	return adminExitOK
}

func (r *adminRun) printProfile(resp *adminResponse) error {
	var p adminProfileView
	if err := resp.decode(&p); err != nil {
		return err
	}
	w := r.env.stdout
	f := newAdminFields(w)
	f.add("ID", p.ID)
	f.add("Site", p.SiteID)
	f.add("Name", p.Name)
	f.add("Status", p.Status)
	f.add("Architecture", p.Architecture)
	f.add("Distro series", p.DistroSeries)
	f.add("HWE kernel", p.HWEKernel)
	f.add("Created", adminTime(p.CreatedAt))
	f.add("Updated", adminTime(p.UpdatedAt))
	f.flush()
	printPolicies(w, "profile", p.Policy, p.EffectivePolicy)
	return nil
}

func profilesPath(site string, ids ...string) string {
	return adminPath(adminPath(adminSitesPath, site)+"/profiles", ids...)
}

func runProfilesCreate(ctx context.Context, r *adminRun, args []string) int {
	pos, body, err := r.parseBody(args, 1, []string{"name", "architecture", "distro-series", "hwe-kernel", "policy-json"}, "name", "architecture", "distro-series")
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodPost, profilesPath(pos[0]), body, r.printProfile)
}

func runProfilesList(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 1)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, profilesPath(pos[0]), nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminProfileView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := newAdminTable(r.env.stdout, "ID", "NAME", "STATUS", "ARCHITECTURE", "DISTRO_SERIES", "HWE_KERNEL")
		for _, p := range l.Items {
			t.row(p.ID, p.Name, p.Status, p.Architecture, p.DistroSeries, p.HWEKernel)
		}
		t.flush()
		return nil
	})
}

func runProfilesGet(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 2)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodGet, profilesPath(pos[0], pos[1]), nil, r.printProfile)
}

func runProfilesPatch(ctx context.Context, r *adminRun, args []string) int {
	pos, body, err := r.parsePatch(args, 2, "name", "architecture", "distro-series", "hwe-kernel", "status", "policy-json")
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodPatch, profilesPath(pos[0], pos[1]), body, r.printProfile)
}

func runProfilesDisable(ctx context.Context, r *adminRun, args []string) int {
	pos, err := r.parse(r.flags(), args, 2)
	if err != nil {
		return r.fail(err)
	}
	return r.call(ctx, http.MethodDelete, profilesPath(pos[0], pos[1]), nil, r.printProfile)
}
