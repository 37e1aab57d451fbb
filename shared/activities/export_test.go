package activities

// The boundary's internals, for the external tests (which may import a
// workflow package for its error types).
var (
	Boundary  = boundary
	ErrorName = errorName
)
