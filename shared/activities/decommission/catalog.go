package decommission

import "github.com/maasflow/maasflow/shared/activities"

// Activities are the decommission workflow's activities, bound to the
// deployment's dependencies.
type Activities struct {
	d activities.Deps
}

// New returns the decommission activities bound to d (nil Clock, NewID,
// Logger and HTTP get their defaults).
func New(d activities.Deps) *Activities { return &Activities{d: d.WithDefaults()} }

// Catalog lists every activity of the decommission workflow, built on d.
func Catalog(d activities.Deps) []activities.Function {
	a := New(d)
	fn := activities.NewFunction
	return []activities.Function{
		fn("begin-decommission", "BeginDecommission", a.BeginDecommission),
		fn("drain-allocations", "DrainAllocations", a.DrainAllocations),
		fn("release-machine", "ReleaseMachine", a.ReleaseMachine),
		fn("check-release", "CheckRelease", a.CheckRelease),
		fn("fallback-release", "FallbackRelease", a.FallbackRelease),
		fn("delete-machine", "DeleteMachine", a.DeleteMachine),
		fn("start-reimage", "StartReimage", a.StartReimage),
		fn("check-reimage", "CheckReimage", a.CheckReimage),
		fn("finish-decommission", "FinishDecommission", a.FinishDecommission),
	}
}
