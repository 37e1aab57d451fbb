package tableaccess_test

import (
	"testing"

	"github.com/maasflow/maasflow/internal/tableaccess"
)

// BenchmarkAnalyze is the cost of infra's table-grant check: loading
// functions/... with its dependencies, building SSA, RTA and VTA, and
// walking every function.
func BenchmarkAnalyze(b *testing.B) {
	for b.Loop() {
		got, err := tableaccess.Analyze("../..", []string{"gsi1", "gsi2", "gsi3", "gsi4"})
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 {
			b.Fatal("no function analysed")
		}
	}
}
