package admin

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time by a release build:
// go build -ldflags "-X github.com/maasflow/maasflow/cmd/maasflow/internal/admin.version=v1.2.3" ./cmd/maasflow
var version = ""

// commit is set at link time with version (make install): the VCS data the
// toolchain embeds is missing from some builds (a source archive, -buildvcs=false).
var commit = ""

// adminVersion is what `maasflow version` reports.
type adminVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	BuildTime string `json:"build_time,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// buildVersion reads the version from the link-time variable, else from
// the module and VCS data the Go toolchain embeds.
func buildVersion() adminVersion {
	v := adminVersion{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "(devel)"
		}
		return v
	}
	if v.Version == "" {
		v.Version = info.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.BuildTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (c *cli) versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the version of this binary",
		Args:  NoPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := &adminRun{cli: c, cmd: cmd}
			if !validOutput(c.output) {
				return usagef("-o must be one of table, json, yaml, not %q", c.output)
			}
			v := buildVersion()
			if r.machine() {
				c.err = r.emitValue(v)
				return nil
			}
			f := newAdminFields(c.env.stdout)
			f.add("Version", v.Version)
			commit := v.Commit
			if v.Modified {
				commit += " (modified)"
			}
			f.add("Commit", commit)
			f.add("Built", v.BuildTime)
			f.add("Go", v.GoVersion)
			f.add("Platform", v.Platform)
			f.flush()
			return nil
		},
	}
	cmd.Flags().StringVarP(&c.output, "output", "o", adminOutputTable, "output format: table, json or yaml")
	return cmd
}
