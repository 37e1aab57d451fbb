package tableaccess

import (
	"go/types"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/tools/go/ssa"
)

// TestRunsCode: what is handed to aws-lambda-go and may hold a handler
// must be followed; options (a slice) hold none.
func TestRunsCode(t *testing.T) {
	handler := types.NewSignatureType(nil, nil, nil, nil, nil, false)
	assert.True(t, runsCode(ssa.NewConst(nil, handler)), "a handler function")
	assert.True(t, runsCode(ssa.NewConst(nil, types.NewInterfaceType(nil, nil))), "a value in an interface (an http.Handler, or lambda.Start's any)")
	assert.False(t, runsCode(ssa.NewConst(nil, types.NewSlice(handler))), "the options")
	assert.False(t, runsCode(ssa.NewConst(nil, types.Typ[types.String])))
}
