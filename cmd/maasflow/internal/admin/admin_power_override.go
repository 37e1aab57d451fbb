package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// powerOverrideCommand stores one host's BMC credentials that differ from
// the site's: the credentials come from stdin or $BMC_USERNAME and
// $BMC_PASSWORD, never from flags.
func (c *cli) powerOverrideCommand() *cobra.Command {
	return c.leaf(adminSpec{
		use: "power-override SITE (--hostname HOST | --bmc-address IP) < bmc.json", short: "store one host's BMC credentials that differ from the site's",
		long: `Store the BMC credentials of one host whose BMC user or password differs from the
site's, read as one JSON object {"bmc_username","bmc_password"} from stdin, or from
$BMC_USERNAME and $BMC_PASSWORD. Never from flags, never typed on a terminal, never
shown again. Discovery creates that host's machine in MAAS with them.`,
		args: []string{"SITE"}, complete: completeSites,
		flags: func(fs *pflag.FlagSet) {
			fs.String("hostname", "", "the host the override is for")
			fs.String("bmc-address", "", "or the BMC address it is for")
		},
		run: runPowerOverride,
	})
}

type adminPowerOverride struct {
	Hostname    string `json:"hostname,omitempty"`
	BMCAddress  string `json:"bmc_address,omitempty"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

func runPowerOverride(ctx context.Context, r *adminRun, args []string) error {
	body := adminPowerOverride{Hostname: r.str("hostname"), BMCAddress: r.str("bmc-address")}
	if (body.Hostname == "") == (body.BMCAddress == "") {
		return usagef("give --hostname or --bmc-address (one of them)")
	}
	user, pass := r.env.getenv(envBMCUsername), r.env.getenv(envBMCPassword)
	if user == "" && pass == "" {
		if r.env.stdinTTY {
			return usagef(`stdin is a terminal: pipe the credentials in as JSON ({"bmc_username","bmc_password"}) or set %s and %s`, envBMCUsername, envBMCPassword)
		}
		b, err := io.ReadAll(io.LimitReader(r.env.stdin, adminMaxCredentials+1))
		if err != nil {
			return errors.New("power override: cannot read stdin")
		}
		var in struct {
			User string `json:"bmc_username"`
			Pass string `json:"bmc_password"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if len(b) > adminMaxCredentials || dec.Decode(&in) != nil {
			return usagef(`power override on stdin: not one JSON object {"bmc_username","bmc_password"}`)
		}
		user, pass = in.User, in.Pass
	}
	if user == "" || pass == "" {
		return usagef("power override: bmc_username and bmc_password are both required")
	}
	body.BMCUsername, body.BMCPassword = user, pass
	return r.siteCall(ctx, args[0], http.MethodPost, "/power-overrides", body, func(resp *adminResponse) error {
		var v struct {
			SiteID     string `json:"site_id"`
			Hostname   string `json:"hostname"`
			BMCAddress string `json:"bmc_address"`
		}
		if err := resp.decode(&v); err != nil {
			return err
		}
		fmt.Fprintf(r.env.stdout, "BMC credentials stored for %s%s of site %s\n", adminCell(v.Hostname), adminCell(v.BMCAddress), adminCell(v.SiteID))
		return nil
	})
}
