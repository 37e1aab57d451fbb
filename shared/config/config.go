package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
)

// Environment variable names. Values that are secrets never appear here:
// only the names or ARNs under which they are kept.
const (
	EnvTable                  = "MAASFLOW_TABLE"
	EnvEventBus               = "MAASFLOW_EVENT_BUS"
	EnvOnboardingStateMachine = "MAASFLOW_ONBOARDING_STATE_MACHINE_ARN"
	// EnvBatchStateMachine names the batch onboarding state machine; unset,
	// a batch starts its rows one by one.
	EnvBatchStateMachine = "MAASFLOW_BATCH_STATE_MACHINE_ARN"
	EnvNodeAPIURL        = "MAASFLOW_NODE_API_URL"
	EnvAdminGroup        = "MAASFLOW_ADMIN_GROUP"
	EnvAdminToken        = "MAASFLOW_ADMIN_TOKEN"
	EnvLogLevel          = "MAASFLOW_LOG_LEVEL"
	// EnvPackageOCIRef and EnvPackageDigest name the node-agent package
	// every bootstrap bundle points at; EnvTaskSigningKeys is the
	// comma-separated list of task-signing public keys.
	EnvPackageOCIRef   = "MAASFLOW_NODE_AGENT_OCI_REF"
	EnvPackageDigest   = "MAASFLOW_NODE_AGENT_DIGEST"
	EnvTaskSigningKeys = "MAASFLOW_TASK_SIGNING_PUBKEYS"
)

// Defaults.
const (
	DefaultEventBus   = "maasflow"
	DefaultAdminGroup = "maasflow-admin"
	EventSource       = "maasflow"
)

// HandlerOptions is the option set every activity handler is wrapped with,
// on Lambda (lambda.StartHandlerFunc) and in local mode
// (lambda.NewHandlerWithOptions). Unknown fields are refused so that every
// ASL Task must build its Payload explicitly.
func HandlerOptions() []lambda.Option {
	return []lambda.Option{lambda.WithDisallowUnknownFields(true)}
}

// Var describes one environment variable a function reads.
type Var struct {
	Name     string
	Default  string
	Required bool
	Target   *string
}

// MissingError lists every required variable that was not set.
type MissingError struct {
	Names []string
}

func (e *MissingError) Error() string {
	return "missing environment variables: " + strings.Join(e.Names, ", ")
}

// Load reads vars from the environment through lookup (os.LookupEnv when
// nil), applies defaults, and reports every missing required variable in one
// error rather than the first.
func Load(lookup func(string) (string, bool), vars ...Var) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var missing []string
	for _, v := range vars {
		if v.Target == nil {
			return errors.New("config: var " + v.Name + " has no target")
		}
		val, ok := lookup(v.Name)
		val = strings.TrimSpace(val)
		switch {
		case ok && val != "":
			*v.Target = val
		case v.Required:
			missing = append(missing, v.Name)
		default:
			*v.Target = v.Default
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return &MissingError{Names: missing}
	}
	return nil
}

// Describe formats a Load error for a main's exit message.
func Describe(err error) string { return fmt.Sprintf("configuration invalid: %v", err) }
