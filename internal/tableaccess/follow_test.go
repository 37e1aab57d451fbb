package tableaccess

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDynamoDB stands in for the SDK's package: a client, and a paginator
// that calls the client for whoever uses it, as the SDK's paginators and
// waiters do.
const fakeDynamoDB = `package dynamodb

import "context"

type Client struct{}

type QueryInput struct {
	TableName *string
	IndexName *string
}
type QueryOutput struct{}
type GetItemInput struct{}
type GetItemOutput struct{}

func (c *Client) Query(ctx context.Context, in *QueryInput) (*QueryOutput, error) { return c.invoke(in) }
func (c *Client) GetItem(ctx context.Context, in *GetItemInput) (*GetItemOutput, error) {
	_, err := c.invoke(in)
	return &GetItemOutput{}, err
}
func (c *Client) invoke(any) (*QueryOutput, error) { return &QueryOutput{}, nil }

type QueryAPIClient interface {
	Query(ctx context.Context, in *QueryInput) (*QueryOutput, error)
}

type QueryPaginator struct {
	client QueryAPIClient
	in     *QueryInput
}

func NewQueryPaginator(c QueryAPIClient, in *QueryInput) *QueryPaginator { return &QueryPaginator{c, in} }

func (p *QueryPaginator) NextPage(ctx context.Context) (*QueryOutput, error) { return p.client.Query(ctx, p.in) }
`

const fakeStore = `package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

type DynamoDB interface {
	dynamodb.QueryAPIClient
	GetItem(ctx context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
}

type Store struct{ db DynamoDB }

func New(db DynamoDB) *Store { return &Store{db: db} }

func (s *Store) Get(ctx context.Context) error {
	_, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{})
	return err
}

func (s *Store) List(ctx context.Context) error {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{})
	_, err := p.NextPage(ctx)
	return err
}
`

// writeModule writes a module named as this one, with the fake SDK
// package, and files (path → source) in it.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{
		"go.mod": "module " + modulePath + "\n\ngo 1.26.0\n\nrequire github.com/aws/aws-sdk-go-v2/service/dynamodb v1.0.0\n\n" +
			"replace github.com/aws/aws-sdk-go-v2/service/dynamodb => ./fakeddb\n",
		"fakeddb/go.mod":    "module " + dynamodbPkg + "\n\ngo 1.26.0\n",
		"fakeddb/client.go": fakeDynamoDB,
	}
	for p, src := range files {
		all[p] = src
	}
	for p, src := range all {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o750))
		require.NoError(t, os.WriteFile(full, []byte(src), 0o600))
	}
	return dir
}

func mainCalling(call string) string {
	return `package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/maasflow/maasflow/shared/store"
)

func main() { _ = store.New(&dynamodb.Client{}).` + call + `(context.Background()) }
`
}

// TestCallsMadeBySDKHelpersCount: a table call the SDK's own code makes
// for the store (a paginator's Query) is one the function's role needs.
func TestCallsMadeBySDKHelpersCount(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"shared/store/store.go":    fakeStore,
		"functions/lister/main.go": mainCalling("List"),
		"functions/getter/main.go": mainCalling("Get"),
	})
	got, err := Analyze(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dynamodb:Query"}, got["lister"].Items, "the paginator's Query")
	assert.Equal(t, []string{"dynamodb:GetItem"}, got["getter"].Items)
}

// TestTableCallsOutsideTheStoreFailTheAnalysis: a client call from a
// package other than shared/store (a wrapper of the client) is not one the
// analysis reads the items of, so it is an error, never a function that
// reaches less than it does.
func TestTableCallsOutsideTheStoreFailTheAnalysis(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"shared/store/store.go": fakeStore,
		"shared/tracing/tracing.go": `package tracing

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func Get(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.GetItem(ctx, &dynamodb.GetItemInput{})
	return err
}
`,
		"functions/traced/main.go": `package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/maasflow/maasflow/shared/tracing"
)

func main() { _ = tracing.Get(context.Background(), &dynamodb.Client{}) }
`,
	})
	_, err := Analyze(dir, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared/tracing")
	assert.Contains(t, err.Error(), "GetItem")
}

// TestAHandlerChosenOnAPathTheAnalysisCannotFollowFails: a handler made by
// a call that returns one function on one path and, on another, one it
// cannot tell (a map's value) is an error, not the one it could tell.
func TestAHandlerChosenOnAPathTheAnalysisCannotFollowFails(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"go.mod": "module " + modulePath + "\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/aws/aws-sdk-go-v2/service/dynamodb v1.0.0\n\tgithub.com/aws/aws-lambda-go v1.0.0\n)\n\n" +
			"replace github.com/aws/aws-sdk-go-v2/service/dynamodb => ./fakeddb\n\nreplace github.com/aws/aws-lambda-go => ./fakelambda\n",
		"fakelambda/go.mod":           "module github.com/aws/aws-lambda-go\n\ngo 1.26.0\n",
		"fakelambda/lambda/lambda.go": "package lambda\n\nimport \"context\"\n\n// Start runs handler.\nfunc Start(handler any) {\n\tif h, ok := handler.(func(context.Context) error); ok {\n\t\t_ = h(context.Background())\n\t}\n}\n",
		"shared/store/store.go":       fakeStore,
		"functions/choose/main.go": `package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/maasflow/maasflow/shared/store"
)

var handlers = map[string]func(context.Context) error{"list": list}

func get(ctx context.Context) error  { return store.New(&dynamodb.Client{}).Get(ctx) }
func list(ctx context.Context) error { return store.New(&dynamodb.Client{}).List(ctx) }

func pick() func(context.Context) error { return handlers[os.Getenv("HANDLER")] }

func handlerFor(direct bool) func(context.Context) error {
	if direct {
		return get
	}
	return pick()
}

func main() { lambda.Start(handlerFor(os.Getenv("DIRECT") != "")) }
`,
	})
	got, err := Analyze(dir, nil)
	require.Error(t, err, "found %v", got)
	assert.Contains(t, err.Error(), "does not follow")
}
