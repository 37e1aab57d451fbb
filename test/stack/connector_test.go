package stack

import (
	"testing"
)

// mainTable is the logical ID of the stack's own table (maasflow-dev), not
// the connector's reply table.
func mainTable(t *testing.T, tpl *template) string {
	t.Helper()
	for _, id := range tpl.ofType("AWS::DynamoDB::Table") {
		if tpl.Resources[id].Properties["TableName"] == "maasflow-dev" {
			return id
		}
	}
	t.Fatal("no table maasflow-dev in the template")
	return ""
}
