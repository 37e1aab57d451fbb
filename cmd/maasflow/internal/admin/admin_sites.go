package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// stringFlags declares string flags with their help.
func stringFlags(fs *pflag.FlagSet, nameHelp ...string) {
	for i := 0; i+1 < len(nameHelp); i += 2 {
		fs.String(nameHelp[i], "", nameHelp[i+1])
	}
}

// body copies the given string flags, when given, into a request body
// under their snake_case names; policy-json becomes "policy".
func (r *adminRun) body(flags ...string) (map[string]any, error) {
	body := map[string]any{}
	for _, name := range flags {
		if !r.changed(name) {
			continue
		}
		v := r.str(name)
		switch name {
		case "policy-json":
			p, err := policyFlag(v)
			if err != nil {
				return nil, err
			}
			body["policy"] = p
		case "status":
			if err := statusFlag(v); err != nil {
				return nil, err
			}
			body["status"] = v
		default:
			body[strings.ReplaceAll(name, "-", "_")] = v
		}
	}
	return body, nil
}

// patchBody is body for a PATCH, which must change something.
func (r *adminRun) patchBody(flags ...string) (map[string]any, error) {
	body, err := r.body(flags...)
	if err == nil && len(body) == 0 {
		err = usagef("nothing to change: give at least one of --%s", strings.Join(flags, ", --"))
	}
	return body, err
}

// call runs the common tail of a command: the request, then either the
// API's answer for programs (-o json|yaml) or the human form printed by
// human.
func (r *adminRun) call(ctx context.Context, c *adminClient, method, path string, body any, human func(*adminResponse) error) error {
	return r.callQuery(ctx, c, method, path, nil, body, human)
}

// callQuery is call with a query string.
func (r *adminRun) callQuery(ctx context.Context, c *adminClient, method, path string, query url.Values, body any, human func(*adminResponse) error) error {
	resp, err := c.do(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	if r.machine() {
		r.emit(resp.Body)
		return nil
	}
	return human(resp)
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

func (c *cli) sitesCommand() *cobra.Command {
	site := []string{"SITE"}
	return c.group("sites", "MAAS sites: create, list, show, change, credentials, probe",
		c.leaf(adminSpec{
			use: "create --name NAME --maas-url URL", short: "create a MAAS site",
			example: `  maasflow sites create --name lab-a --maas-url http://maas.lab-a:5240/MAAS --policy-json '{"auto_claim_new":false}'`,
			flags: func(fs *pflag.FlagSet) {
				stringFlags(fs, "name", "site name, unique (commands take it instead of the id)", "maas-url", "MAAS region URL, http://host:5240/MAAS",
					"description", "free text", "policy-json", "site policy, one JSON object")
			},
			run: runSitesCreate,
		}),
		c.leaf(adminSpec{use: "list", short: "list sites", run: runSitesList}),
		c.leaf(adminSpec{use: "get SITE", short: "show a site and its effective policy (SITE is an id or a name)", args: site, complete: completeSites, run: runSitesGet}),
		c.leaf(adminSpec{
			use: "patch SITE", short: "change a site (--policy-json is merged into the site's policy)", args: site, complete: completeSites,
			flags: func(fs *pflag.FlagSet) {
				stringFlags(fs, "name", "new name", "maas-url", "new MAAS URL", "description", "free text",
					"status", "active or disabled", "policy-json", "policy keys to set, one JSON object")
			},
			run: runSitesPatch,
		}),
		c.leaf(adminSpec{use: "disable SITE", short: "disable a site (asks first; --yes, --dry-run)", args: site, complete: completeSites,
			flags: destructiveFlags, run: runSitesDisable}),
		c.leaf(adminSpec{
			use: "credentials SITE < creds.json", short: "store the site's MAAS API key and BMC credentials",
			long: `Store the site's MAAS API key and BMC credentials, read as one JSON object
{"maas_api_key","bmc_username","bmc_password"} from stdin, or from $MAAS_API_KEY,
$BMC_USERNAME and $BMC_PASSWORD. Never from flags, and never typed on a terminal.`,
			args: site, complete: completeSites, run: runSitesCredentials,
		}),
		c.leaf(adminSpec{use: "probe SITE", short: "check MAAS reachability, version and capabilities (exit 1 when unhealthy)", args: site, complete: completeSites, run: runSitesProbe}),
		c.powerOverrideCommand(),
	)
}

func runSitesCreate(ctx context.Context, r *adminRun, _ []string) error {
	if err := r.requireFlags("name", "maas-url"); err != nil {
		return err
	}
	body, err := r.body("name", "maas-url", "description", "policy-json")
	if err != nil {
		return err
	}
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodPost, adminSitesPath, body, r.printSite)
}

func runSitesList(ctx context.Context, r *adminRun, _ []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	return r.call(ctx, c, http.MethodGet, adminSitesPath, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminSiteView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := r.table("ID", "NAME", "STATUS", "MAAS_URL", "CREDENTIALS", "PROBE")
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

// siteCall resolves the SITE argument and runs one request on the site's
// path plus suffix.
func (r *adminRun) siteCall(ctx context.Context, ref, method, suffix string, body any, human func(*adminResponse) error) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := r.siteID(ctx, c, ref)
	if err != nil {
		return err
	}
	return r.call(ctx, c, method, adminPath(adminSitesPath, id)+suffix, body, human)
}

func runSitesGet(ctx context.Context, r *adminRun, args []string) error {
	return r.siteCall(ctx, args[0], http.MethodGet, "", nil, r.printSite)
}

func runSitesPatch(ctx context.Context, r *adminRun, args []string) error {
	body, err := r.patchBody("name", "maas-url", "description", "status", "policy-json")
	if err != nil {
		return err
	}
	return r.siteCall(ctx, args[0], http.MethodPatch, "", body, r.printSite)
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

func runSitesCredentials(ctx context.Context, r *adminRun, args []string) error {
	creds, err := r.readCredentials()
	if err != nil {
		return err
	}
	return r.siteCall(ctx, args[0], http.MethodPost, "/credentials", creds, func(resp *adminResponse) error {
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

func runSitesProbe(ctx context.Context, r *adminRun, args []string) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	id, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, adminPath(adminSitesPath, id, "probe"), nil, nil)
	if err != nil {
		return err
	}
	var p adminProbeView
	if err := resp.decode(&p); err != nil {
		return err
	}
	if r.machine() {
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
		return &ExitCodeError{Code: adminExitError}
	}
	return nil
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

func (c *cli) profilesCommand() *cobra.Command {
	sp := []string{"SITE", "PROFILE"}
	profileFlags := func(fs *pflag.FlagSet) {
		stringFlags(fs, "name", "profile name, unique in its site", "architecture", "MAAS architecture, e.g. amd64/generic",
			"distro-series", "MAAS distro series, e.g. jammy", "hwe-kernel", "HWE kernel, e.g. hwe-22.04",
			"policy-json", "profile policy overriding the site's, one JSON object")
	}
	return c.group("profiles", "deployment profiles of a site",
		c.leaf(adminSpec{
			use: "create SITE --name NAME --architecture ARCH --distro-series SERIES", short: "create a profile under a site",
			args: []string{"SITE"}, complete: completeSites, flags: profileFlags, run: runProfilesCreate,
		}),
		c.leaf(adminSpec{use: "list SITE", short: "list a site's profiles", args: []string{"SITE"}, complete: completeSites, run: runProfilesList}),
		c.leaf(adminSpec{use: "get SITE PROFILE", short: "show a profile and its effective policy (ids or names)", args: sp, complete: completeSiteProfiles, run: runProfilesGet}),
		c.leaf(adminSpec{
			use: "patch SITE PROFILE", short: "change a profile", args: sp, complete: completeSiteProfiles,
			flags: func(fs *pflag.FlagSet) {
				profileFlags(fs)
				fs.String("status", "", "active or disabled")
			},
			run: runProfilesPatch,
		}),
		c.leaf(adminSpec{use: "disable SITE PROFILE", short: "disable a profile", args: sp, complete: completeSiteProfiles, run: runProfilesDisable}),
	)
}

// profileCall resolves SITE (and PROFILE when given) and runs one request.
func (r *adminRun) profileCall(ctx context.Context, args []string, method string, body any, human func(*adminResponse) error) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	site, err := r.siteID(ctx, c, args[0])
	if err != nil {
		return err
	}
	path := profilesPath(site)
	if len(args) > 1 {
		profile, err := r.profileID(ctx, c, site, args[1])
		if err != nil {
			return err
		}
		path = profilesPath(site, profile)
	}
	return r.call(ctx, c, method, path, body, human)
}

func runProfilesCreate(ctx context.Context, r *adminRun, args []string) error {
	if err := r.requireFlags("name", "architecture", "distro-series"); err != nil {
		return err
	}
	body, err := r.body("name", "architecture", "distro-series", "hwe-kernel", "policy-json")
	if err != nil {
		return err
	}
	return r.profileCall(ctx, args, http.MethodPost, body, r.printProfile)
}

func runProfilesList(ctx context.Context, r *adminRun, args []string) error {
	return r.profileCall(ctx, args, http.MethodGet, nil, func(resp *adminResponse) error {
		var l struct {
			Items []adminProfileView `json:"items"`
		}
		if err := resp.decode(&l); err != nil {
			return err
		}
		t := r.table("ID", "NAME", "STATUS", "ARCHITECTURE", "DISTRO_SERIES", "HWE_KERNEL")
		for _, p := range l.Items {
			t.row(p.ID, p.Name, p.Status, p.Architecture, p.DistroSeries, p.HWEKernel)
		}
		t.flush()
		return nil
	})
}

func runProfilesGet(ctx context.Context, r *adminRun, args []string) error {
	return r.profileCall(ctx, args, http.MethodGet, nil, r.printProfile)
}

func runProfilesPatch(ctx context.Context, r *adminRun, args []string) error {
	body, err := r.patchBody("name", "architecture", "distro-series", "hwe-kernel", "status", "policy-json")
	if err != nil {
		return err
	}
	return r.profileCall(ctx, args, http.MethodPatch, body, r.printProfile)
}

func runProfilesDisable(ctx context.Context, r *adminRun, args []string) error {
	return r.profileCall(ctx, args, http.MethodDelete, nil, r.printProfile)
}
