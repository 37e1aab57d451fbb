package onboarding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
)

// handlerTypes returns an activity handler's input and output types.
func handlerTypes(t *testing.T, h any) (in, out reflect.Type) {
	t.Helper()
	ft := reflect.TypeOf(h)
	require.Equal(t, reflect.Func, ft.Kind())
	require.Equal(t, 2, ft.NumIn())
	require.Equal(t, 2, ft.NumOut())
	return ft.In(1), ft.Out(0)
}

// jsonFields lists the JSON keys of a struct type, embedded structs
// flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name := strings.Split(tag, ",")[0]
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// TestSamplePayloadsPinTheContract decodes each activity's sample payload
// (testdata/<Activity>.json, what the state machine sends) the way both
// runtimes do, unknown fields refused, and checks it round-trips: a renamed
// or dropped JSON field breaks it. Invoked through aws-lambda-go's handler
// for an onboarding that does not exist, each reports RecordNotFoundError by
// name, as Step Functions would see it; the watcher's two read no
// onboarding (the woken check fences the wait) and succeed.
func TestSamplePayloadsPinTheContract(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	fns := onboarding.Catalog(e.f.Deps)
	for _, fn := range fns {
		t.Run(fn.Activity, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", fn.Activity+".json"))
			require.NoError(t, err)
			inType, _ := handlerTypes(t, fn.Handler)
			v := reflect.New(inType)
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(v.Interface()))
			back, err := json.Marshal(v.Interface())
			require.NoError(t, err)
			assert.JSONEq(t, string(raw), string(back))

			_, err = lambdaHandler(fn.Handler).Invoke(context.Background(), raw)
			if fn.Activity == "WatchMachine" || fn.Activity == "WatchSites" {
				require.NoError(t, err)
				return
			}
			requireErrorName(t, err, "RecordNotFoundError")
		})
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	assert.Len(t, files, len(fns), "one sample per activity, no strays")
}

type aslTask struct {
	Type           string         `json:"Type"`
	Parameters     map[string]any `json:"Parameters"`
	ResultSelector map[string]any `json:"ResultSelector"`
}

// TestASLPayloadsMatchTheActivities checks every Task's explicit Payload
// against the activity's input type and every ResultSelector path against
// its output type.
func TestASLPayloadsMatchTheActivities(t *testing.T) {
	raw, err := os.ReadFile("../../../statemachines/onboarding.asl.json")
	require.NoError(t, err)
	var def struct {
		States map[string]aslTask `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	byArn := map[string]activities.Function{}
	for _, fn := range onboarding.Catalog(activities.Deps{}) {
		byArn["${"+fn.Substitution+"}"] = fn
	}
	for name, st := range def.States {
		if st.Type != "Task" {
			continue
		}
		fn, ok := byArn[st.Parameters["FunctionName"].(string)]
		require.True(t, ok, name)
		inType, outType := handlerTypes(t, fn.Handler)
		inFields := jsonFields(inType)
		payload := st.Parameters["Payload"].(map[string]any)
		var keys []string
		for k, v := range payload {
			key := strings.TrimSuffix(k, ".$")
			keys = append(keys, key)
			ft, ok := inFields[key]
			if !assert.True(t, ok, "state %s sends %q, which %sInput has no field for", name, key, fn.Activity) {
				continue
			}
			if nested, isObj := v.(map[string]any); isObj {
				sub := jsonFields(ft)
				for nk := range nested {
					assert.Contains(t, sub, strings.TrimSuffix(nk, ".$"), "state %s sends %s.%s", name, key, nk)
				}
			}
		}
		for _, must := range []string{"onboarding_id", "site_id", "hostname", "attempt", "correlation_id"} {
			assert.Contains(t, keys, must, "state %s", name)
		}
		outFields := jsonFields(outType)
		for k, v := range st.ResultSelector {
			path, _ := v.(string)
			require.True(t, strings.HasPrefix(path, "$.Payload."), "state %s ResultSelector %s", name, k)
			field := strings.TrimPrefix(path, "$.Payload.")
			assert.Contains(t, outFields, field, "state %s selects %s, which %sOutput lacks", name, field, fn.Activity)
		}
	}
}

// TestOutputsHoldNoSecrets marshals every output type's field names: no
// activity returns the token, the user_data or a credential.
func TestOutputsHoldNoSecrets(t *testing.T) {
	var names []string
	for _, fn := range onboarding.Catalog(activities.Deps{}) {
		_, out := handlerTypes(t, fn.Handler)
		for k := range jsonFields(out) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		for _, bad := range []string{"token", "user_data", "password", "api_key", "secret"} {
			assert.NotContains(t, n, bad, "output field %s", n)
		}
	}
}
