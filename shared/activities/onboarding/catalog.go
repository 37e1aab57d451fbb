package onboarding

import "github.com/maasflow/maasflow/shared/activities"

// Activities holds the dependencies every activity uses; each exported
// method is one activity's handler, func(ctx, <Activity>Input)
// (<Activity>Output, error), so a Lambda main can hand it to
// lambda.StartHandlerFunc and have its signature checked at compile time.
type Activities struct {
	d activities.Deps
	// watchClients keeps WatchSites' MAAS client of each site across its
	// rounds (watch_sites.go).
	watchClients siteClients
}

// New returns the activities bound to d (nil Clock, NewID, Logger and HTTP
// get their defaults).
func New(d activities.Deps) *Activities { return &Activities{d: d.WithDefaults()} }

// Catalog lists every activity of the onboarding workflow, built on d.
func Catalog(d activities.Deps) []activities.Function {
	a := New(d)
	fn := activities.NewFunction
	return []activities.Function{
		fn("take-site-slot", "TakeSiteSlot", a.TakeSiteSlot),
		fn("validate-onboarding", "ValidateOnboarding", a.ValidateOnboarding),
		fn("discover-machine", "DiscoverMachine", a.DiscoverMachine),
		fn("commission-machine", "CommissionMachine", a.CommissionMachine),
		fn("check-machine", "CheckMachine", a.CheckMachine),
		fn("power-cycle-machine", "PowerCycleMachine", a.PowerCycleMachine),
		fn("verify-hardware", "VerifyHardware", a.VerifyHardware),
		fn("configure-machine", "ConfigureMachine", a.ConfigureMachine),
		fn("configure-storage", "ConfigureStorage", a.ConfigureStorage),
		fn("preflight-pxe", "PreflightPXE", a.PreflightPXE),
		fn("apply-roce", "ApplyRoCE", a.ApplyRoCE),
		fn("check-predeploy", "CheckPredeploy", a.CheckPredeploy),
		fn("deploy-machine", "DeployMachine", a.DeployMachine),
		fn("classify-deploy-failure", "ClassifyDeployFailure", a.ClassifyDeployFailure),
		fn("recover-deploy", "RecoverDeploy", a.RecoverDeploy),
		fn("await-enrollment", "AwaitEnrollment", a.AwaitEnrollment),
		fn("check-completion-gates", "CheckCompletionGates", a.CheckCompletionGates),
		fn("finish-onboarding", "FinishOnboarding", a.FinishOnboarding),
		fn("reset-machine", "ResetMachine", a.ResetMachine),
		fn("adopt-machine", "AdoptMachine", a.AdoptMachine),
		fn("watch-machine", "WatchMachine", a.WatchMachine),
		fn("watch-sites", "WatchSites", a.WatchSites),
	}
}
