package asl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// distributed wraps a processor and extra Map fields into a one-state
// machine whose Map runs in DISTRIBUTED mode.
func distributed(mapFields, processor string) string {
	return `{"StartAt":"M","States":{"M":{"Type":"Map",` + mapFields + `,
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},` + processor + `},"End":true}}}`
}

const passProcessor = `"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}`

// The ItemBatcher page of the developer guide: with MaxItemsPerBatch and
// BatchInput each child execution receives {"BatchInput":…,"Items":[…]}.
func TestDistributedMapItemBatcher(t *testing.T) {
	items := `[{"verdict":"true","statement_date":"6/11/2008","statement_source":"speech"},
	  {"verdict":"false","statement_date":"6/7/2022","statement_source":"television"},
	  {"verdict":"true","statement_date":"5/18/2016","statement_source":"news"}]`
	tests := []struct {
		name, batcher, want string
	}{
		{"MaxItemsPerBatch with BatchInput", `{"MaxItemsPerBatch":2,"BatchInput":{"factCheck":"TRUE"}}`, `[
		  {"BatchInput":{"factCheck":"TRUE"},"Items":[{"verdict":"true","statement_date":"6/11/2008","statement_source":"speech"},{"verdict":"false","statement_date":"6/7/2022","statement_source":"television"}]},
		  {"BatchInput":{"factCheck":"TRUE"},"Items":[{"verdict":"true","statement_date":"5/18/2016","statement_source":"news"}]}]`},
		{"MaxItemsPerBatchPath, BatchInput from the input", `{"MaxItemsPerBatchPath":"$.per","BatchInput":{"from.$":"$.source"}}`, `[
		  {"BatchInput":{"from":"feed"},"Items":[{"verdict":"true","statement_date":"6/11/2008","statement_source":"speech"},{"verdict":"false","statement_date":"6/7/2022","statement_source":"television"},{"verdict":"true","statement_date":"5/18/2016","statement_source":"news"}]}]`},
		{"MaxInputBytesPerBatch", `{"MaxInputBytesPerBatch":150}`, `[
		  {"Items":[{"verdict":"true","statement_date":"6/11/2008","statement_source":"speech"}]},
		  {"Items":[{"verdict":"false","statement_date":"6/7/2022","statement_source":"television"}]},
		  {"Items":[{"verdict":"true","statement_date":"5/18/2016","statement_source":"news"}]}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := distributed(`"ItemsPath":"$.items","ItemBatcher":`+tc.batcher, passProcessor)
			r := run(t, def, `{"per":5,"source":"feed","items":`+items+`}`, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, tc.want, r.Exec.Output)
		})
	}
}

// Each child execution has a context object of its own: its own
// execution ARN, name and input, and the state machine
// "<parent>/<Label>"; the parent's history shows the Map Run, not the
// children's events.
func TestDistributedMapChildExecutionContext(t *testing.T) {
	for _, execType := range []string{"STANDARD", "EXPRESS"} {
		t.Run(execType, func(t *testing.T) {
			def := `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"Scan","ItemsPath":"$.items",
			  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"` + execType + `"},
			    "StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"id.$":"$$.Execution.Id","name.$":"$$.Execution.Name",
			      "input.$":"$$.Execution.Input","sm.$":"$$.StateMachine.Id","smName.$":"$$.StateMachine.Name"},"End":true}}},"End":true}}}`
			r := run(t, def, `{"items":[{"n":1},{"n":2}]}`, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			var out []map[string]any
			require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
			require.Len(t, out, 2)
			kind := "execution:test/Scan:"
			if execType == "EXPRESS" {
				kind = "express:test/Scan:"
			}
			for i, o := range out {
				id := o["id"].(string)
				assert.True(t, strings.HasPrefix(id, "arn:aws:states:us-east-1:123456789012:"+kind), id)
				assert.True(t, strings.HasSuffix(id, ":"+o["name"].(string)), id)
				assert.NotEqual(t, r.Exec.ExecutionARN, id)
				assert.Equal(t, map[string]any{"n": float64(i + 1)}, o["input"])
				assert.Equal(t, "arn:aws:states:us-east-1:123456789012:stateMachine:test/Scan", o["sm"])
				assert.Equal(t, "test/Scan", o["smName"])
			}
			assert.NotEqual(t, out[0]["name"], out[1]["name"])
			assert.Equal(t, []string{"ExecutionStarted", "MapStateEntered", "MapRunStarted", "MapRunSucceeded", "MapStateExited", "ExecutionSucceeded"}, r.types())
			assert.True(t, strings.HasPrefix(r.History[2].Details.MapRunARN, "arn:aws:states:us-east-1:123456789012:mapRun:test/Scan:"), r.History[2].Details.MapRunARN)
			b, err := json.Marshal(r.History[2])
			require.NoError(t, err)
			assert.Contains(t, string(b), `"mapRunStartedEventDetails":{"mapRunArn":"arn:aws:states:`)
		})
	}
}

// A child execution starts without the parent's variables: validation
// refuses a reference to an outer variable, and a name the child assigns
// too is still undefined in the child until the child assigns it.
func TestDistributedMapChildSeesNoOuterVariables(t *testing.T) {
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"outer":"x"},"Next":"M"},
	  "M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"ProcessorConfig":{"Mode":"%s"},
	    "StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"v.$":"$outer"},%s}}},"End":true}}}`
	inline := fmt.Sprintf(def, "INLINE", `"End":true`)
	r := run(t, inline, `{"items":[1]}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `[{"v":"x"}]`, r.Exec.Output, "an inline iteration reads outer variables")

	_, err := Parse([]byte(fmt.Sprintf(def, `DISTRIBUTED","ExecutionType":"STANDARD`, `"End":true`)), nil)
	require.ErrorContains(t, err, `state "M/ItemProcessor/P": field "Parameters": references the variable $outer, which no state assigns in this distributed Map`)

	r = run(t, fmt.Sprintf(def, `DISTRIBUTED","ExecutionType":"STANDARD`, `"Next":"Q"},"Q":{"Type":"Pass","Assign":{"outer":"y"},"End":true`), `{"items":[1]}`, nil)
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrExceedToleratedFailureThreshold, r.Exec.Error)
}

// The developer guide's "Tolerated failure threshold for Distributed Map
// state": the Map Run fails with States.ExceedToleratedFailureThreshold when
// failed items exceed the count or the percentage of all items; the
// default threshold is 0; a failed batch counts every item in it.
func TestDistributedMapToleratedFailures(t *testing.T) {
	fail := `"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.bad","BooleanEquals":true,"Next":"F"}],"Default":"S"},
	  "F":{"Type":"Fail","Error":"Item.Bad","Cause":"bad item"},"S":{"Type":"Succeed"}}`
	batchFail := `"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.Items[0].bad","BooleanEquals":true,"Next":"F"}],"Default":"S"},
	  "F":{"Type":"Fail","Error":"Item.Bad","Cause":"bad batch"},"S":{"Type":"Succeed"}}`
	twoBad := `{"items":[{"bad":true},{"bad":false},{"bad":true},{"bad":false},{"bad":false}]}`
	tests := []struct {
		name, fields, proc, input string
		status, err, output       string
	}{
		{"no threshold: one failure fails the run", `"ItemsPath":"$.items"`, fail, `{"items":[{"bad":false},{"bad":true}]}`,
			StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"count not exceeded", `"ItemsPath":"$.items","ToleratedFailureCount":2`, fail, twoBad,
			StatusSucceeded, "", `[{"Error":"Item.Bad","Cause":"bad item"},{"bad":false},{"Error":"Item.Bad","Cause":"bad item"},{"bad":false},{"bad":false}]`},
		{"count exceeded", `"ItemsPath":"$.items","ToleratedFailureCount":1`, fail, twoBad, StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"percentage not exceeded (2 of 5 = 40%)", `"ItemsPath":"$.items","ToleratedFailurePercentage":40`, fail, twoBad, StatusSucceeded, "", ""},
		{"percentage exceeded", `"ItemsPath":"$.items","ToleratedFailurePercentagePath":"$.pct"`, fail, `{"pct":39,"items":[{"bad":true},{"bad":false},{"bad":true},{"bad":false},{"bad":false}]}`,
			StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"100% tolerates every failure", `"ItemsPath":"$.items","ToleratedFailurePercentage":100`, fail, `{"items":[{"bad":true},{"bad":true}]}`, StatusSucceeded, "", ""},
		{"a failed batch counts each of its items", `"ItemsPath":"$.items","ItemBatcher":{"MaxItemsPerBatch":2},"ToleratedFailureCount":1`, batchFail,
			`{"items":[{"bad":false},{"bad":false},{"bad":true},{"bad":false}]}`, StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"a failed batch within the count", `"ItemsPath":"$.items","ItemBatcher":{"MaxItemsPerBatch":2},"ToleratedFailureCount":2`, batchFail,
			`{"items":[{"bad":false},{"bad":false},{"bad":true},{"bad":false}]}`, StatusSucceeded, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, distributed(tc.fields, tc.proc), tc.input, nil)
			require.Equal(t, tc.status, r.Exec.Status, r.Exec.Cause)
			if tc.err != "" {
				assert.Equal(t, tc.err, r.Exec.Error)
				assert.Contains(t, r.types(), "MapRunFailed")
			}
			if tc.output != "" {
				assert.JSONEq(t, tc.output, r.Exec.Output)
			}
		})
	}
}

// MaxConcurrency bounds the child executions running at once.
func TestDistributedMapMaxConcurrency(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	h := lambda.NewHandler(func(in map[string]any) (map[string]any, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return in, nil
	})
	go func() {
		for range 6 {
			release <- struct{}{}
		}
	}()
	def := distributed(`"ItemsPath":"$.items","MaxConcurrency":1`, `"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:w","End":true}}`)
	r := run(t, def, `{"items":[{"a":1},{"a":2},{"a":3},{"a":4},{"a":5},{"a":6}]}`, map[string]TaskHandler{"w": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.Equal(t, 1, most)
	assert.JSONEq(t, `[{"a":1},{"a":2},{"a":3},{"a":4},{"a":5},{"a":6}]`, r.Exec.Output)
}

func writeObject(t *testing.T, dir, bucket, key, body string) {
	t.Helper()
	p := filepath.Join(dir, bucket, filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
}

// The ItemReader page of the developer guide: a CSV file's rows become
// objects keyed by the header with string values; JSON and JSONL files
// give their elements; MaxItems keeps the first ones; listObjectsV2 lists
// the objects under a prefix.
func TestDistributedMapItemReader(t *testing.T) {
	dir := t.TempDir()
	writeObject(t, dir, "amzn-s3-demo-bucket", "csvDataset/ratings.csv", "rating,movieId,userId,timestamp\n3.5,307,1,1256677221\n4.0,481,1,1256677456\n")
	writeObject(t, dir, "amzn-s3-demo-bucket", "given.csv", "3.5|307\n4.0|481\n")
	writeObject(t, dir, "amzn-s3-demo-bucket", "data.json", `[{"a":1},{"a":2},{"a":3}]`)
	writeObject(t, dir, "amzn-s3-demo-bucket", "data.jsonl", "{\"a\":1}\n\n{\"a\":2}\n")
	writeObject(t, dir, "amzn-s3-demo-bucket", "processData/images/b.jpg", "bb")
	writeObject(t, dir, "amzn-s3-demo-bucket", "processData/images/a.jpg", "a")
	reader := func(resource, cfg, params string) string {
		r := `"ItemReader":{"Resource":"` + resource + `","Parameters":` + params
		if cfg != "" {
			r += `,"ReaderConfig":` + cfg
		}
		return r + "}"
	}
	tests := []struct {
		name, reader, want string
	}{
		{"CSV, header in the first row", reader(readerGetObject, `{"InputType":"CSV","CSVHeaderLocation":"FIRST_ROW"}`, `{"Bucket":"amzn-s3-demo-bucket","Key":"csvDataset/ratings.csv"}`),
			`[{"rating":"3.5","movieId":"307","userId":"1","timestamp":"1256677221"},{"rating":"4.0","movieId":"481","userId":"1","timestamp":"1256677456"}]`},
		{"CSV, given headers and a pipe delimiter", reader(readerGetObject, `{"InputType":"CSV","CSVHeaderLocation":"GIVEN","CSVHeaders":["rating","movieId"],"CSVDelimiter":"PIPE"}`, `{"Bucket":"amzn-s3-demo-bucket","Key":"given.csv"}`),
			`[{"rating":"3.5","movieId":"307"},{"rating":"4.0","movieId":"481"}]`},
		{"JSON with MaxItems", reader(readerGetObject, `{"InputType":"JSON","MaxItems":2}`, `{"Bucket":"amzn-s3-demo-bucket","Key":"data.json"}`), `[{"a":1},{"a":2}]`},
		{"JSONL, key from the input", reader(readerGetObject, `{"InputType":"JSONL"}`, `{"Bucket":"amzn-s3-demo-bucket","Key.$":"$.key"}`), `[{"a":1},{"a":2}]`},
		{"listObjectsV2", reader(readerListObjects, "", `{"Bucket":"amzn-s3-demo-bucket","Prefix":"processData"}`), ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runOpts(t, distributed(tc.reader, passProcessor), `{"key":"data.jsonl"}`, Options{BucketDir: dir})
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			if tc.want != "" {
				assert.JSONEq(t, tc.want, r.Exec.Output)
				return
			}
			var out []map[string]any
			require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
			require.Len(t, out, 2)
			assert.Equal(t, "processData/images/a.jpg", out[0]["Key"])
			assert.Equal(t, `"0cc175b9c0f1b6a831c399e269772661"`, out[0]["Etag"], "the MD5 of the object")
			assert.EqualValues(t, 1, out[0]["Size"])
			assert.Equal(t, "STANDARD", out[0]["StorageClass"])
			assert.IsType(t, 0.0, out[0]["LastModified"])
			assert.Equal(t, "processData/images/b.jpg", out[1]["Key"])
		})
	}
}

// ItemReader and ResultWriter failures name the field; without a local
// directory for S3 they fail rather than read or write anything.
func TestDistributedMapReaderWriterFailures(t *testing.T) {
	dir := t.TempDir()
	writeObject(t, dir, "b", "not-array.json", `{"a":1}`)
	get := func(key string) string {
		return `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON"},"Parameters":{"Bucket":"b","Key":"` + key + `"}}`
	}
	tests := []struct {
		name, fields, bucketDir, err, cause string
	}{
		{"no bucket directory", get("x.json"), "", ErrItemReaderFailed, "ItemReader: no local directory stands for S3"},
		{"missing object", get("x.json"), dir, ErrItemReaderFailed, "ItemReader: the object s3://b/x.json does not exist"},
		{"not an array", get("not-array.json"), dir, ErrItemReaderFailed, "must hold a JSON array"},
		{"key leaving the bucket", get("../../etc/passwd"), dir, ErrItemReaderFailed, "leaves the bucket"},
		{"parquet", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"PARQUET"},"Parameters":{"Bucket":"b","Key":"not-array.json"}}`, dir, ErrItemReaderFailed, "InputType PARQUET is not supported"},
		{"writer without a bucket directory", `"ItemsPath":"$.items","ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"p"}}`, "", ErrResultWriterFailed, "ResultWriter: no local directory stands for S3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runOpts(t, distributed(tc.fields, passProcessor), `{"items":[1]}`, Options{BucketDir: tc.bucketDir})
			require.Equal(t, StatusFailed, r.Exec.Status)
			assert.Equal(t, tc.err, r.Exec.Error)
			assert.Contains(t, r.Exec.Cause, tc.cause)
		})
	}
}

// ResultWriter writes the child executions' results under
// Bucket/Prefix/<map run id>/ (manifest.json, SUCCEEDED_0.json,
// FAILED_0.json) and the Map's output points at the manifest; WriterConfig
// alone reshapes the output instead.
func TestDistributedMapResultWriter(t *testing.T) {
	dir := t.TempDir()
	proc := `"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.bad","BooleanEquals":true,"Next":"F"}],"Default":"S"},
	  "F":{"Type":"Fail","Error":"Item.Bad","Cause":"bad item"},"S":{"Type":"Pass","Parameters":{"out.$":"$.n"},"End":true}}`
	def := distributed(`"ItemsPath":"$.items","ToleratedFailureCount":1,"Label":"Export",
	  "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"results","Prefix":"runs"}}`, proc)
	r := runOpts(t, def, `{"items":[{"n":1,"bad":false},{"n":2,"bad":true}]}`, Options{BucketDir: dir})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	var out struct {
		MapRunArn           string
		ResultWriterDetails struct{ Bucket, Key string }
	}
	require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
	assert.True(t, strings.HasPrefix(out.MapRunArn, "arn:aws:states:us-east-1:123456789012:mapRun:test/Export:"), out.MapRunArn)
	runID := out.MapRunArn[strings.LastIndex(out.MapRunArn, ":")+1:]
	assert.Equal(t, "results", out.ResultWriterDetails.Bucket)
	assert.Equal(t, "runs/"+runID+"/manifest.json", out.ResultWriterDetails.Key)

	read := func(key string) any {
		b, err := os.ReadFile(filepath.Join(dir, "results", filepath.FromSlash(key)))
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(b, &v))
		return v
	}
	manifest := read(out.ResultWriterDetails.Key).(map[string]any)
	assert.Equal(t, "results", manifest["DestinationBucket"])
	assert.Equal(t, out.MapRunArn, manifest["MapRunArn"])
	files := manifest["ResultFiles"].(map[string]any)
	assert.Equal(t, []any{}, files["PENDING"])
	succeeded := files["SUCCEEDED"].([]any)[0].(map[string]any)
	assert.Equal(t, "runs/"+runID+"/SUCCEEDED_0.json", succeeded["Key"])
	recs := read(succeeded["Key"].(string)).([]any)
	require.Len(t, recs, 1)
	rec := recs[0].(map[string]any)
	assert.Equal(t, "SUCCEEDED", rec["Status"])
	assert.Equal(t, `{"bad":false,"n":1}`, rec["Input"])
	assert.Equal(t, `{"out":1}`, rec["Output"])
	assert.Equal(t, "arn:aws:states:us-east-1:123456789012:stateMachine:test/Export", rec["StateMachineArn"])
	assert.True(t, strings.HasSuffix(rec["ExecutionArn"].(string), ":"+rec["Name"].(string)))
	failed := read(files["FAILED"].([]any)[0].(map[string]any)["Key"].(string)).([]any)
	require.Len(t, failed, 1)
	assert.Equal(t, "FAILED", failed[0].(map[string]any)["Status"])
	assert.Equal(t, "Item.Bad", failed[0].(map[string]any)["Error"])
	assert.Equal(t, "bad item", failed[0].(map[string]any)["Cause"])

	t.Run("WriterConfig alone", func(t *testing.T) {
		for how, want := range map[string]string{
			"COMPACT": `[[1,2],{"x":3}]`,
			"FLATTEN": `[1,2,{"x":3}]`,
		} {
			def := distributed(`"ItemsPath":"$.items","ResultWriter":{"WriterConfig":{"OutputType":"JSON","Transformation":"`+how+`"}}`, passProcessor)
			r := run(t, def, `{"items":[[1,2],{"x":3}]}`, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, want, r.Exec.Output, how)
		}
	})
}

// `maasflow asl validate` accepts the distributed Map definitions AWS
// documents and refuses what AWS refuses.
func TestASLValidateDistributedMap(t *testing.T) {
	valid := []string{
		distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"FIRST_ROW"},"Parameters":{"Bucket":"amzn-s3-demo-bucket","Key":"csvDataset/ratings.csv"}},
		  "ItemSelector":{"index.$":"$$.Map.Item.Index","value.$":"$$.Map.Item.Value"},"ItemBatcher":{"MaxItemsPerBatch":100,"BatchInput":{"factCheck":"TRUE"}},
		  "MaxConcurrency":1000,"ToleratedFailurePercentage":5,"Label":"Movies",
		  "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"amzn-s3-demo-destination-bucket","Prefix":"csvProcessJobs"}},"ResultPath":null`, passProcessor),
		distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"amzn-s3-demo-bucket","Prefix":"processData"}}`, passProcessor),
		distributed(`"ItemsPath":"$.items","ToleratedFailureCountPath":"$.n","ItemBatcher":{"MaxInputBytesPerBatchPath":"$.b"},"ResultWriter":{"WriterConfig":{"OutputType":"JSONL","Transformation":"FLATTEN"}}`, passProcessor),
	}
	for i, d := range valid {
		_, err := Parse([]byte(d), nil)
		require.NoError(t, err, "definition %d", i)
	}
	inlineProc := `{"ProcessorConfig":{"Mode":"INLINE"},` + passProcessor + `}`
	tests := []struct {
		name, def, field, msg string
	}{
		{"ExecutionType missing", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},` + passProcessor + `},"End":true}}}`, "ItemProcessor.ProcessorConfig.ExecutionType", "is required"},
		{"ExecutionType on INLINE", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE","ExecutionType":"EXPRESS"},` + passProcessor + `},"End":true}}}`, "ItemProcessor.ProcessorConfig.ExecutionType", "only when Mode is DISTRIBUTED"},
		{"ItemBatcher on an inline Map", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemBatcher":{"MaxItemsPerBatch":2},"ItemProcessor":` + inlineProc + `,"End":true}}}`, "ItemBatcher", "only in a distributed Map"},
		{"Label on an inline Map", `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"x","ItemProcessor":` + inlineProc + `,"End":true}}}`, "Label", "only in a distributed Map"},
		{"Label too long", distributed(`"Label":"`+strings.Repeat("a", 41)+`"`, passProcessor), "Label", "at most 40"},
		{"Label with a colon", distributed(`"Label":"a:b"`, passProcessor), "Label", "must not contain"},
		{"ItemBatcher without a limit", distributed(`"ItemBatcher":{"BatchInput":{"a":1}}`, passProcessor), "ItemBatcher", "at least one of"},
		{"MaxItemsPerBatch and its path", distributed(`"ItemBatcher":{"MaxItemsPerBatch":2,"MaxItemsPerBatchPath":"$.n"}`, passProcessor), "ItemBatcher.MaxItemsPerBatch", "mutually exclusive"},
		{"MaxInputBytesPerBatch over 256 KiB", distributed(`"ItemBatcher":{"MaxInputBytesPerBatch":262145}`, passProcessor), "ItemBatcher.MaxInputBytesPerBatch", "from 1 to 262144"},
		{"reader resource", distributed(`"ItemReader":{"Resource":"arn:aws:states:::dynamodb:scan","Parameters":{}}`, passProcessor), "ItemReader.Resource", "must be"},
		{"getObject without InputType", distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{},"Parameters":{"Bucket":"b","Key":"k"}}`, passProcessor), "ItemReader.ReaderConfig.InputType", "is required"},
		{"CSVHeaders without GIVEN", distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaders":["a"]},"Parameters":{"Bucket":"b","Key":"k"}}`, passProcessor), "ItemReader.ReaderConfig.CSVHeaders", "only when CSVHeaderLocation is GIVEN"},
		{"GIVEN without CSVHeaders", distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"GIVEN"},"Parameters":{"Bucket":"b","Key":"k"}}`, passProcessor), "ItemReader.ReaderConfig.CSVHeaders", "is required"},
		{"unknown InputType", distributed(`"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"XML"},"Parameters":{"Bucket":"b","Key":"k"}}`, passProcessor), "ItemReader.ReaderConfig.InputType", "must be one of"},
		{"writer resource", distributed(`"ResultWriter":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b"}}`, passProcessor), "ResultWriter.Resource", "must be"},
		{"writer transformation", distributed(`"ResultWriter":{"WriterConfig":{"Transformation":"ZIP"}}`, passProcessor), "ResultWriter.WriterConfig.Transformation", "must be one of"},
		{"legacy Iterator in DISTRIBUTED mode", `{"StartAt":"M","States":{"M":{"Type":"Map","Iterator":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},` + passProcessor + `},"End":true}}}`, "Iterator", "needs ItemProcessor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.def), nil)
			var de *DefinitionError
			require.ErrorAs(t, err, &de)
			found := false
			for _, p := range de.Problems {
				if p.State == "M" && p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					found = true
				}
			}
			assert.True(t, found, "want field %q message containing %q; got %v", tc.field, tc.msg, de.Problems)
		})
	}
}
