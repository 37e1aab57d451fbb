package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The config file names contexts, kubectl style: each an admin API and
// the identity provider that signs its operators in. Every admin command
// uses the current context (or --context): its API URL, and the token
// `maasflow login` stored for it. $MAASFLOW_API_URL, $MAASFLOW_ADMIN_TOKEN
// and --api-url still win over the file.

// EnvConfig names the config file instead of the default
// $XDG_CONFIG_HOME/maasflow/config.yaml.
const EnvConfig = "MAASFLOW_CONFIG"

// Config is the config file.
type Config struct {
	CurrentContext string              `yaml:"current-context,omitempty"`
	Contexts       map[string]*Context `yaml:"contexts,omitempty"`
}

// Context is one admin API and its identity provider.
type Context struct {
	APIURL string `yaml:"api-url,omitempty"`
	// Issuer is the token issuer: a Cognito user pool's or any OIDC
	// issuer's URL.
	Issuer   string `yaml:"issuer,omitempty"`
	ClientID string `yaml:"client-id,omitempty"`
	// StreamURL is where watch and --wait open their streams when the API
	// cannot stream (on AWS, the stack's StreamUrl output).
	StreamURL string `yaml:"stream-url,omitempty"`
}

// ConfigDir is the directory of the config file and of the tokens login
// stores: $XDG_CONFIG_HOME/maasflow, else $HOME/.config/maasflow; "" when
// neither is set.
func ConfigDir(getenv func(string) string) string {
	if p := getenv(EnvConfig); p != "" {
		return filepath.Dir(p)
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "maasflow")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "maasflow")
	}
	return ""
}

// ConfigPath is the config file's path ("" when there is none to use).
func ConfigPath(getenv func(string) string) string {
	if p := getenv(EnvConfig); p != "" {
		return p
	}
	if d := ConfigDir(getenv); d != "" {
		return filepath.Join(d, "config.yaml")
	}
	return ""
}

// TokenPath is where login keeps the session of the named context (the
// default session, token.json, without one).
func TokenPath(dir, contextName string) string {
	if contextName == "" {
		return filepath.Join(dir, "token.json")
	}
	return filepath.Join(dir, "tokens", contextName+".json")
}

// LoadConfig reads the config file; a missing one is an empty config.
func LoadConfig(path string) (*Config, error) {
	cfg := &Config{Contexts: map[string]*Context{}}
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, cfg); err != nil {
		return nil, fmt.Errorf("config %s is not valid YAML: %w", path, err)
	}
	if cfg.Contexts == nil {
		cfg.Contexts = map[string]*Context{}
	}
	return cfg, nil
}

// Save writes the config file (0600, its directory 0700).
func (cfg *Config) Save(path string) error {
	if path == "" {
		return errors.New("no config file: set $XDG_CONFIG_HOME, $HOME or $" + EnvConfig)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Selected is the context named by name, else the current one; nil (and
// "") when there is none.
func (cfg *Config) Selected(name string) (string, *Context, error) {
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return "", nil, nil
	}
	ctx, ok := cfg.Contexts[name]
	if !ok {
		return "", nil, usagef("context %q is not in the config file (maasflow config get-contexts lists them)", name)
	}
	return name, ctx, nil
}

// contextFlag adds --context to an admin command.
func (c *cli) contextFlag(pf *pflag.FlagSet) {
	pf.StringVar(&c.contextName, "context", "", "the config file's context to use (default its current-context)")
}

// selectedContext reads the config and picks --context or the current one.
func (r *adminRun) selectedContext() (string, *Context, error) {
	cfg, err := LoadConfig(ConfigPath(r.env.getenv))
	if err != nil {
		return "", nil, err
	}
	return cfg.Selected(r.contextName)
}

// contextToken is the token login stored for the context, refreshed when
// about to expire ("" when there is none).
func (r *adminRun) contextToken(ctx context.Context, name string) (string, error) {
	if r.env.token == nil {
		return "", nil
	}
	dir := ConfigDir(r.env.getenv)
	if dir == "" {
		return "", nil
	}
	return r.env.token(ctx, TokenPath(dir, name))
}

// configCommand is `maasflow config`.
func (c *cli) configCommand() *cobra.Command {
	run := func(f func(cmd *cobra.Command, path string, cfg *Config, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			path := ConfigPath(c.env.getenv)
			cfg, err := LoadConfig(path)
			if err == nil {
				err = f(cmd, path, cfg, args)
			}
			c.err = err
			return nil
		}
	}
	setCtx := &cobra.Command{
		Use:   "set-context NAME [--api-url URL] [--issuer URL] [--client-id ID] [--stream-url URL]",
		Short: "create a context or change it; the first one becomes the current context",
		Args:  exactIDs("NAME"),
		RunE: run(func(cmd *cobra.Command, path string, cfg *Config, args []string) error {
			ctx := cfg.Contexts[args[0]]
			if ctx == nil {
				ctx = &Context{}
				cfg.Contexts[args[0]] = ctx
			}
			for flag, dst := range map[string]*string{"api-url": &ctx.APIURL, "issuer": &ctx.Issuer, "client-id": &ctx.ClientID, "stream-url": &ctx.StreamURL} {
				if cmd.Flags().Changed(flag) {
					*dst, _ = cmd.Flags().GetString(flag)
				}
			}
			if cfg.CurrentContext == "" {
				cfg.CurrentContext = args[0]
			}
			if err := cfg.Save(path); err != nil {
				return err
			}
			fmt.Fprintf(c.env.stdout, "context %s saved in %s\n", adminCell(args[0]), path)
			return nil
		}),
	}
	stringFlags(setCtx.Flags(), "api-url", "the admin API's base URL", "issuer", "the token issuer (Cognito user pool or OIDC) `maasflow login` signs in at",
		"client-id", "the issuer's OAuth client id for the CLI",
		"stream-url", "where watch and --wait open their streams, when not at the API (on AWS: the stack's StreamUrl output)")
	useCtx := &cobra.Command{
		Use:   "use-context NAME",
		Short: "make NAME the current context",
		Args:  exactIDs("NAME"),
		RunE: run(func(_ *cobra.Command, path string, cfg *Config, args []string) error {
			if _, _, err := cfg.Selected(args[0]); err != nil {
				return err
			}
			cfg.CurrentContext = args[0]
			if err := cfg.Save(path); err != nil {
				return err
			}
			fmt.Fprintf(c.env.stdout, "switched to context %s\n", adminCell(args[0]))
			return nil
		}),
	}
	getCtxs := &cobra.Command{
		Use:   "get-contexts",
		Short: "list the contexts; * marks the current one",
		Args:  NoPositional,
		RunE: run(func(_ *cobra.Command, _ string, cfg *Config, _ []string) error {
			t := newAdminTable(c.env.stdout, "CURRENT", "NAME", "API URL", "ISSUER", "CLIENT ID")
			names := make([]string, 0, len(cfg.Contexts))
			for n := range cfg.Contexts {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				x := cfg.Contexts[n]
				cur := ""
				if n == cfg.CurrentContext {
					cur = "*"
				}
				t.row(cur, n, orDash(x.APIURL), orDash(x.Issuer), orDash(x.ClientID))
			}
			t.flush()
			return nil
		}),
	}
	curCtx := &cobra.Command{
		Use:   "current-context",
		Short: "print the current context's name",
		Args:  NoPositional,
		RunE: run(func(_ *cobra.Command, _ string, cfg *Config, _ []string) error {
			if cfg.CurrentContext == "" {
				return errors.New("no current context: maasflow config set-context NAME --api-url URL")
			}
			fmt.Fprintln(c.env.stdout, adminCell(cfg.CurrentContext))
			return nil
		}),
	}
	g := Group("config", "contexts of the config file: which admin API and identity provider to use", setCtx, useCtx, getCtxs, curCtx)
	g.Long = "The config file (" + strings.Join([]string{"$" + EnvConfig, "$XDG_CONFIG_HOME/maasflow/config.yaml", "~/.config/maasflow/config.yaml"}, ", else ") +
		`) names contexts: an admin API URL and the
identity provider (issuer, client id) that signs its operators in. Every admin command
uses the current context, or --context NAME; maasflow login stores its token in the
context. $MAASFLOW_API_URL, $MAASFLOW_ADMIN_TOKEN and --api-url still override it.`
	return g
}
