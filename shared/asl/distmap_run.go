package asl

import (
	"bufio"
	"bytes"
	"crypto/md5" //nolint:gosec // S3's ETag of a simple upload is the MD5 of the object
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// mapRun is one run of a distributed Map: the Map Run resource AWS creates,
// and the child executions it starts.
type mapRun struct {
	e       *Engine
	id      string
	arn     string
	smARN   string // the child executions' state machine: parent/label
	smName  string
	express bool

	mu       sync.Mutex
	children []*childRun // by unit index; nil for a unit never started
}

// childRun is a distributed Map's child execution: its identity in the
// context object, and what ResultWriter reports of it.
type childRun struct {
	arn, name     string
	smARN, smName string
	input         any
	start, stop   time.Time
	output        any
	f             *failure
}

// newMapRun mints the Map Run's ARNs. The child state machine is named
// "<parent state machine>/<Label>"; without a Label this runtime uses the
// state's name.
func (r *stateRun) newMapRun(units int) *mapRun {
	e := r.t.x.e
	label := r.st.dist.label
	if label == "" {
		label = r.st.name
	}
	parent := r.t.x.sm.name
	if cx := r.t.cx; cx != nil {
		parent = cx.smName
	}
	smName := parent + "/" + label
	id := e.newID()
	return &mapRun{
		e: e, id: id,
		arn:      fmt.Sprintf("arn:aws:states:%s:%s:mapRun:%s:%s", e.region, e.account, smName, id),
		smARN:    fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", e.region, e.account, smName),
		smName:   smName,
		express:  r.st.dist.executionType == "EXPRESS",
		children: make([]*childRun, units),
	}
}

// runChild runs unit i as a child execution in thread c: its own context
// object and no variables of the parent (a child execution starts with
// none, as AWS's variable scope rules say of distributed Maps).
func (m *mapRun) runChild(c *thread, proc *machine, i int, input any) (any, *failure) {
	name := m.e.newID()
	arn := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", m.e.region, m.e.account, m.smName, name)
	if m.express {
		arn = fmt.Sprintf("arn:aws:states:%s:%s:express:%s:%s:%s", m.e.region, m.e.account, m.smName, m.id, name)
	}
	cx := &childRun{arn: arn, name: name, smARN: m.smARN, smName: m.smName, input: input, start: m.e.clock.Now()}
	c.cx = cx
	c.vars = &varScope{}
	out, f := c.runMachine(proc, input)
	stop := m.e.clock.Now()
	m.mu.Lock()
	cx.stop, cx.output, cx.f = stop, out, f
	m.children[i] = cx
	m.mu.Unlock()
	return out, f
}

// results turns the child executions' outputs into the Map's result: the
// outputs in order, or what ResultWriter makes of them.
func (m *mapRun) results(r *stateRun, outputs []any) (any, *failure) {
	w := r.st.dist.writer
	if w == nil {
		return outputs, nil
	}
	var succeeded, failed []any
	for _, cx := range m.children {
		if cx == nil || cx.f == errCanceled {
			continue
		}
		rec := m.record(cx)
		if cx.f == nil {
			succeeded = append(succeeded, rec)
		} else {
			failed = append(failed, rec)
		}
	}
	if w.params == nil && w.args == nil {
		// WriterConfig alone shapes the state's output instead of files.
		return transform(w.transformation, succeeded), nil
	}
	return m.write(r, w, transform(w.transformation, succeeded), transform(w.transformation, failed))
}

// record is the entry ResultWriter keeps of one child execution, shaped as
// AWS's SUCCEEDED_n.json and FAILED_n.json entries.
func (m *mapRun) record(cx *childRun) map[string]any {
	rec := map[string]any{
		"ExecutionArn":    cx.arn,
		"Input":           toJSON(cx.input),
		"InputDetails":    map[string]any{"Included": true},
		"Name":            cx.name,
		"RedriveCount":    int64(0),
		"StartDate":       cx.start.UTC().Format(timeLayout),
		"StateMachineArn": cx.smARN,
		"StopDate":        cx.stop.UTC().Format(timeLayout),
	}
	if cx.f == nil {
		rec["Status"] = StatusSucceeded
		rec["Output"] = toJSON(cx.output)
		rec["OutputDetails"] = map[string]any{"Included": true}
		rec["RedriveStatus"] = "NOT_REDRIVABLE"
		rec["RedriveStatusReason"] = "Execution is SUCCEEDED and cannot be redriven"
		return rec
	}
	rec["Status"] = StatusFailed
	rec["Error"] = cx.f.Error
	if cx.f.HasCause {
		rec["Cause"] = cx.f.Cause
	}
	rec["RedriveStatus"] = "REDRIVABLE"
	return rec
}

// transform applies WriterConfig.Transformation: NONE keeps the execution
// entries, COMPACT keeps their outputs (a failure's Error and Cause),
// FLATTEN joins outputs that are arrays into one array.
func transform(how string, recs []any) []any {
	if how == "NONE" {
		if recs == nil {
			return []any{}
		}
		return recs
	}
	out := []any{}
	for _, rec := range recs {
		m := rec.(map[string]any)
		var v any
		if text, ok := m["Output"].(string); ok {
			v, _ = parseJSON([]byte(text))
		} else {
			e := map[string]any{"Error": m["Error"]}
			if c, ok := m["Cause"]; ok {
				e["Cause"] = c
			}
			v = e
		}
		if list, isList := v.([]any); isList && how == "FLATTEN" {
			out = append(out, list...)
			continue
		}
		out = append(out, v)
	}
	return out
}

// write stores the results under Bucket/Prefix/<map run id>/ as AWS's
// ResultWriter does (manifest.json, SUCCEEDED_0.json, FAILED_0.json) and
// returns the Map's output that points at them.
func (m *mapRun) write(r *stateRun, w *resultWriter, succeeded, failed []any) (any, *failure) {
	fail := func(format string, args ...any) *failure {
		return &failure{Error: ErrResultWriterFailed, HasCause: true, Cause: "ResultWriter: " + fmt.Sprintf(format, args...)}
	}
	var params any
	var f *failure
	if w.args != nil {
		params, f = w.args.eval(r, jstates{})
	} else {
		params, f = w.params.eval(r.raw, r, r.t.x.e.entropy)
	}
	if f != nil {
		return nil, f
	}
	pm, _ := params.(map[string]any)
	bucket, _ := pm["Bucket"].(string)
	prefix, _ := pm["Prefix"].(string)
	if bucket == "" {
		return nil, fail("Parameters.Bucket must be a non-empty string")
	}
	dir, err := m.e.bucketPath(bucket, prefix)
	if err != nil {
		return nil, fail("%v", err)
	}
	dir = filepath.Join(dir, m.id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fail("%v", err)
	}
	keyOf := func(name string) string { return strings.TrimPrefix(joinKey(prefix, m.id, name), "/") }
	ext := ".json"
	if w.outputType == "JSONL" {
		ext = ".jsonl"
	}
	files := map[string]any{"FAILED": []any{}, "PENDING": []any{}, "SUCCEEDED": []any{}}
	for _, part := range []struct {
		status string
		recs   []any
	}{{"SUCCEEDED", succeeded}, {"FAILED", failed}} {
		if len(part.recs) == 0 {
			continue
		}
		body := encodeRecords(part.recs, w.outputType)
		name := part.status + "_0" + ext
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			return nil, fail("%v", err)
		}
		files[part.status] = []any{map[string]any{"Key": keyOf(name), "Size": int64(len(body))}}
	}
	manifest := map[string]any{"DestinationBucket": bucket, "MapRunArn": m.arn, "ResultFiles": files}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(toJSON(manifest)), 0o600); err != nil {
		return nil, fail("%v", err)
	}
	return map[string]any{
		"MapRunArn":           m.arn,
		"ResultWriterDetails": map[string]any{"Bucket": bucket, "Key": keyOf("manifest.json")},
	}, nil
}

func encodeRecords(recs []any, outputType string) []byte {
	if outputType != "JSONL" {
		return []byte(toJSON(recs))
	}
	var b bytes.Buffer
	for _, rec := range recs {
		b.WriteString(toJSON(rec))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func joinKey(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.Trim(p, "/"); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "/")
}

// bucketPath maps an S3 bucket and key (or prefix) to a path under
// Options.BucketDir, refusing keys that would leave the bucket's directory.
func (e *Engine) bucketPath(bucket, key string) (string, error) {
	if e.bucketDir == "" {
		return "", errors.New("no local directory stands for S3 (Options.BucketDir, or --buckets of maasflow asl run)")
	}
	if bucket == "" || strings.ContainsAny(bucket, `/\`) || bucket == "." || bucket == ".." {
		return "", fmt.Errorf("invalid bucket name %q", bucket)
	}
	root := filepath.Join(e.bucketDir, bucket)
	p := filepath.Join(root, filepath.FromSlash(key))
	if p != root && !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return "", fmt.Errorf("the key %q leaves the bucket", key)
	}
	return p, nil
}

// readItems reads a distributed Map's items through its ItemReader.
func (r *stateRun) readItems(eff any) ([]any, *failure) {
	rd := r.st.dist.reader
	e := r.t.x.e
	fail := func(format string, args ...any) *failure {
		return &failure{Error: ErrItemReaderFailed, HasCause: true, Cause: "ItemReader: " + fmt.Sprintf(format, args...)}
	}
	var pm map[string]any
	switch {
	case rd.args != nil:
		v, f := rd.args.eval(r, jstates{})
		if f != nil {
			return nil, f
		}
		pm, _ = v.(map[string]any)
	case rd.params != nil:
		v, f := rd.params.eval(eff, r, e.entropy)
		if f != nil {
			return nil, f
		}
		pm, _ = v.(map[string]any)
	}
	bucket, _ := pm["Bucket"].(string)
	if bucket == "" {
		return nil, fail("Parameters.Bucket must be a non-empty string")
	}
	maxItems := rd.maxItems
	if rd.maxItemsPath != nil {
		v, ok := rd.maxItemsPath.get(eff, r)
		n, isInt := isInteger(v)
		if !ok || !isInt || n < 0 {
			return nil, runtimeFailure(fmt.Sprintf("The path '%s' (ItemReader.ReaderConfig.MaxItemsPath) must reference a non-negative integer", rd.maxItemsPath.text))
		}
		maxItems = n
	}
	if rd.jMaxItems != nil {
		n, f := r.jsonataInt(rd.jMaxItems, maxItems, 0, 100_000_000)
		if f != nil {
			return nil, f
		}
		maxItems = n
	}
	var items []any
	var err error
	if rd.resource == readerListObjects {
		prefix, _ := pm["Prefix"].(string)
		items, err = e.listObjects(bucket, prefix)
	} else {
		key, _ := pm["Key"].(string)
		if key == "" {
			return nil, fail("Parameters.Key must be a non-empty string")
		}
		items, err = e.getObjectItems(rd, bucket, key)
	}
	if err != nil {
		return nil, fail("%v", err)
	}
	if maxItems > 0 && int64(len(items)) > maxItems {
		items = items[:maxItems]
	}
	return items, nil
}

// getObjectItems parses one object as AWS's ReaderConfig.InputType says.
func (e *Engine) getObjectItems(rd *itemReader, bucket, key string) ([]any, error) {
	p, err := e.bucketPath(bucket, key)
	if err != nil {
		return nil, err
	}
	body, err := os.ReadFile(p) //nolint:gosec // the path is confined to the bucket directory
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the object s3://%s/%s does not exist", bucket, key)
	}
	if err != nil {
		return nil, err
	}
	switch rd.inputType {
	case "JSON":
		v, err := parseJSON(body)
		if err != nil {
			return nil, fmt.Errorf("s3://%s/%s is not valid JSON: %w", bucket, key, err)
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("s3://%s/%s must hold a JSON array", bucket, key)
		}
		return list, nil
	case "JSONL":
		var out []any
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 0, 64*1024), MaxPayloadBytes+1)
		for line := 1; sc.Scan(); line++ {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			v, err := parseJSON(text)
			if err != nil {
				return nil, fmt.Errorf("s3://%s/%s line %d is not valid JSON: %w", bucket, key, line, err)
			}
			out = append(out, v)
		}
		return out, sc.Err()
	case "CSV":
		return csvItems(body, rd)
	}
	return nil, fmt.Errorf("ReaderConfig.InputType %s is not supported by the embedded runtime (CSV, JSON and JSONL are)", rd.inputType)
}

// csvItems turns CSV rows into objects keyed by the header, every value a
// string, as AWS's CSV reader does.
func csvItems(body []byte, rd *itemReader) ([]any, error) {
	cr := csv.NewReader(bytes.NewReader(body))
	cr.Comma = rd.delimiter
	cr.FieldsPerRecord = -1
	headers := rd.headers
	var out []any
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if headers == nil {
			headers = rec
			continue
		}
		if len(rec) > len(headers) {
			return nil, fmt.Errorf("a CSV row has %d fields but the header only %d", len(rec), len(headers))
		}
		row := make(map[string]any, len(headers))
		for i, h := range headers {
			v := ""
			if i < len(rec) {
				v = rec[i]
			}
			row[h] = v
		}
		out = append(out, row)
	}
}

// listObjects lists a bucket's objects under prefix in key order, each as
// ListObjectsV2 describes it.
func (e *Engine) listObjects(bucket, prefix string) ([]any, error) {
	root, err := e.bucketPath(bucket, "")
	if err != nil {
		return nil, err
	}
	var keys []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the bucket %q does not exist", bucket)
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	out := make([]any, 0, len(keys))
	for _, key := range keys {
		p := filepath.Join(root, filepath.FromSlash(key))
		body, err := os.ReadFile(p) //nolint:gosec // confined to the bucket directory
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		sum := md5.Sum(body) //nolint:gosec // S3's ETag, not a security measure
		out = append(out, map[string]any{
			"Etag":         `"` + hex.EncodeToString(sum[:]) + `"`,
			"Key":          key,
			"LastModified": info.ModTime().Unix(),
			"Size":         int64(len(body)),
			"StorageClass": "STANDARD",
		})
	}
	return out, nil
}

// batches groups item inputs as ItemBatcher says; without one every item
// is a unit of its own (weights nil).
func (r *stateRun) batches(eff any, inputs []any) ([]any, []int, *failure) {
	if r.st.dist == nil || r.st.dist.batcher == nil {
		return inputs, nil, nil
	}
	b := r.st.dist.batcher
	maxItems, maxBytes := b.maxItems, b.maxBytes
	for _, pf := range []struct {
		p    *path
		dst  *int64
		most int64
	}{{b.maxItemsPath, &maxItems, 0}, {b.maxBytesPath, &maxBytes, MaxPayloadBytes}} {
		if pf.p == nil {
			continue
		}
		v, ok := pf.p.get(eff, r)
		n, isInt := isInteger(v)
		if !ok || !isInt || n < 1 || (pf.most > 0 && n > pf.most) {
			return nil, nil, runtimeFailure(fmt.Sprintf("The path '%s' must reference a positive integer%s", pf.p.text, limitText(pf.most)))
		}
		*pf.dst = n
	}
	var f *failure
	if maxItems, f = r.jsonataInt(b.jMaxItems, maxItems, 1, math.MaxInt32); f != nil {
		return nil, nil, f
	}
	if maxBytes, f = r.jsonataInt(b.jMaxBytes, maxBytes, 1, MaxPayloadBytes); f != nil {
		return nil, nil, f
	}
	var batchInput any
	if b.jBatchInput != nil {
		v, f := b.jBatchInput.eval(r, jstates{})
		if f != nil {
			return nil, nil, f
		}
		batchInput = v
	} else if b.batchInput != nil {
		v, f := b.batchInput.eval(eff, r, r.t.x.e.entropy)
		if f != nil {
			return nil, nil, f
		}
		batchInput = v
	}
	newBatch := func() map[string]any {
		m := map[string]any{"Items": []any{}}
		if batchInput != nil {
			m["BatchInput"] = batchInput
		}
		return m
	}
	var units []any
	var weights []int
	cur := newBatch()
	size := jsonSize(cur)
	for _, in := range inputs {
		items := cur["Items"].([]any)
		n := jsonSize(in)
		if len(items) > 0 && ((maxItems > 0 && int64(len(items)) >= maxItems) || (maxBytes > 0 && int64(size+n+1) > maxBytes)) {
			units, weights = append(units, cur), append(weights, len(items))
			cur = newBatch()
			size = jsonSize(cur)
			items = nil
		}
		if len(items) > 0 {
			size++ // the comma
		}
		cur["Items"] = append(items, in)
		size += n
	}
	if items := cur["Items"].([]any); len(items) > 0 {
		units, weights = append(units, cur), append(weights, len(items))
	}
	return units, weights, nil
}

func limitText(most int64) string {
	if most == 0 {
		return ""
	}
	return fmt.Sprintf(" of at most %d", most)
}
