package asl

import "strings"

// distributedMap holds what a Map in DISTRIBUTED mode adds to an inline
// one. The embedded runtime runs it inline: each item (or batch) runs as a
// child execution of its own — its own context object, no outer variables,
// no events in the parent's history — inside the parent's process.
type distributedMap struct {
	executionType string // STANDARD or EXPRESS
	label         string
	reader        *itemReader
	batcher       *itemBatcher
	writer        *resultWriter
}

// itemReader is a Map's ItemReader: items from an S3 object or an S3
// listing, served locally from Options.BucketDir.
type itemReader struct {
	resource       string // readerGetObject or readerListObjects
	params         *template
	args           *jvalue // Arguments, in a JSONata state (instead of Parameters)
	inputType      string  // CSV, JSON, JSONL (MANIFEST and PARQUET are refused when run)
	headerLocation string  // FIRST_ROW or GIVEN
	headers        []string
	delimiter      rune
	maxItems       int64 // 0: all
	maxItemsPath   *path
	jMaxItems      *jvalue // MaxItems as a JSONata expression
}

// itemBatcher is a Map's ItemBatcher: items grouped into one child input
// {"BatchInput": …, "Items": […]}.
type itemBatcher struct {
	maxItems     int64
	maxItemsPath *path
	maxBytes     int64
	maxBytesPath *path
	batchInput   *template
	jBatchInput  *jvalue // BatchInput in a JSONata state
	// The limits as JSONata expressions.
	jMaxItems, jMaxBytes *jvalue
}

// resultWriter is a Map's ResultWriter: the child executions' results
// written to files under Options.BucketDir instead of the state's output.
type resultWriter struct {
	params         *template
	args           *jvalue // Arguments, in a JSONata state (instead of Parameters)
	outputType     string  // JSON or JSONL
	transformation string  // NONE, COMPACT or FLATTEN
}

const (
	readerGetObject   = "arn:aws:states:::s3:getObject"
	readerListObjects = "arn:aws:states:::s3:listObjectsV2"
	writerPutObject   = "arn:aws:states:::s3:putObject"
	// maxLabelLength is the longest Label AWS accepts.
	maxLabelLength = 40
)

// distributedOnly are the Map fields AWS accepts only in DISTRIBUTED mode.
var distributedOnly = []string{"ItemReader", "ItemBatcher", "ResultWriter", "Label"}

// processorMode checks ItemProcessor.ProcessorConfig and returns the mode
// and execution type ("INLINE", "" when absent).
func (c *compiler) processorMode(pm map[string]any, where, field string) (string, string) {
	raw, ok := pm["ProcessorConfig"]
	if !ok {
		return "INLINE", ""
	}
	cfg, ok := raw.(map[string]any)
	if !ok {
		c.add(where, field+".ProcessorConfig", "must be an object")
		return "INLINE", ""
	}
	at := field + ".ProcessorConfig"
	for _, k := range sortedKeys(cfg) {
		if k != "Mode" && k != "ExecutionType" {
			c.add(where, at+"."+k, "unknown field")
		}
	}
	mode := "INLINE"
	if v, ok := cfg["Mode"]; ok {
		s, _ := v.(string)
		if s != "INLINE" && s != "DISTRIBUTED" {
			c.add(where, at+".Mode", "must be \"INLINE\" or \"DISTRIBUTED\"")
			return "INLINE", ""
		}
		mode = s
	}
	execType, hasType := cfg["ExecutionType"]
	switch {
	case mode == "INLINE" && hasType:
		c.add(where, at+".ExecutionType", "is allowed only when Mode is DISTRIBUTED")
	case mode == "DISTRIBUTED" && !hasType:
		c.add(where, at+".ExecutionType", "is required when Mode is DISTRIBUTED (\"STANDARD\" or \"EXPRESS\")")
	case hasType && execType != "STANDARD" && execType != "EXPRESS":
		c.add(where, at+".ExecutionType", "must be \"STANDARD\" or \"EXPRESS\"")
	}
	s, _ := execType.(string)
	return mode, s
}

// distributed compiles the fields of a DISTRIBUTED Map.
func (c *compiler) distributed(m map[string]any, where, execType string, isJSONata bool) *distributedMap {
	d := &distributedMap{executionType: execType}
	if v, ok := m["Label"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr || s == "":
			c.add(where, "Label", "must be a non-empty string")
		case len(s) > maxLabelLength:
			c.add(where, "Label", "must be at most %d characters", maxLabelLength)
		case strings.ContainsAny(s, " \t\n\r<>{}[]?*\"#%\\^|~`$&,;:/") || hasControl(s):
			c.add(where, "Label", "must not contain whitespace, brackets, wildcards, control characters or any of \" # %% \\ ^ | ~ ` $ & , ; : /")
		}
		d.label = s
	}
	// A JSONata state writes the reader's and writer's Parameters as
	// Arguments, with {% %} expressions instead of ".$" keys.
	params := "Parameters"
	if isJSONata {
		params = "Arguments"
	}
	if v, ok := m["ItemReader"]; ok {
		d.reader = c.itemReader(v, where, params)
	}
	if v, ok := m["ItemBatcher"]; ok {
		d.batcher = c.itemBatcher(v, where, isJSONata)
	}
	if v, ok := m["ResultWriter"]; ok {
		d.writer = c.resultWriter(v, where, params)
	}
	return d
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// object checks that v is an object with only the allowed fields.
func (c *compiler) object(v any, where, field string, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(where, field, "must be an object")
		return nil, false
	}
	for _, k := range sortedKeys(m) {
		if !containsString(allowed, k) {
			c.add(where, field+"."+k, "unknown field")
		}
	}
	return m, true
}

// enum reads an optional string field that must be one of values.
func (c *compiler) enum(m map[string]any, where, field, key, def string, values ...string) string {
	v, ok := m[key]
	if !ok {
		return def
	}
	s, _ := v.(string)
	if !containsString(values, s) {
		c.add(where, field+"."+key, "must be one of %s", strings.Join(values, ", "))
		return def
	}
	return s
}

// positive reads an optional positive integer field (0 when absent).
func (c *compiler) positive(m map[string]any, where, field, key string, most int64) int64 {
	v, ok := m[key]
	if !ok {
		return 0
	}
	n, isInt := isInteger(v)
	if !isInt || n < 1 || (most > 0 && n > most) {
		if most > 0 {
			c.add(where, field+"."+key, "must be an integer from 1 to %d", most)
		} else {
			c.add(where, field+"."+key, "must be a positive integer")
		}
		return 0
	}
	return n
}

// exclusive reports a value field given together with its …Path form.
func (c *compiler) exclusive(m map[string]any, where, field, key string) {
	if _, a := m[key]; a {
		if _, b := m[key+"Path"]; b {
			c.add(where, field+"."+key, "%s and %sPath are mutually exclusive", key, key)
		}
	}
}

func (c *compiler) itemReader(v any, where, params string) *itemReader {
	m, ok := c.object(v, where, "ItemReader", "Resource", "ReaderConfig", params)
	if !ok {
		return nil
	}
	r := &itemReader{delimiter: ','}
	r.resource, _ = m["Resource"].(string)
	switch r.resource {
	case readerGetObject, readerListObjects:
	case "":
		c.add(where, "ItemReader.Resource", "is required")
	default:
		c.add(where, "ItemReader.Resource", "must be %q or %q", readerGetObject, readerListObjects)
	}
	if p, ok := m[params]; ok {
		switch _, isObj := p.(map[string]any); {
		case !isObj:
			c.add(where, "ItemReader."+params, "must be an object")
		case params == "Arguments":
			r.args = c.jvalue(p, where, "ItemReader/Arguments")
		default:
			r.params = c.template(p, where, "ItemReader.Parameters")
		}
	} else {
		c.add(where, "ItemReader."+params, "is required (Bucket, and Key or Prefix)")
	}
	cfgRaw, hasCfg := m["ReaderConfig"]
	if !hasCfg {
		if r.resource == readerGetObject {
			c.add(where, "ItemReader.ReaderConfig", "is required with %s (InputType)", readerGetObject)
		}
		return r
	}
	const f = "ItemReader.ReaderConfig"
	cfg, ok := c.object(cfgRaw, where, f, "InputType", "CSVHeaderLocation", "CSVHeaders", "CSVDelimiter", "MaxItems", "MaxItemsPath")
	if !ok {
		return r
	}
	r.inputType = c.enum(cfg, where, f, "InputType", "", "CSV", "JSON", "JSONL", "MANIFEST", "PARQUET")
	if _, ok := cfg["InputType"]; !ok && r.resource == readerGetObject {
		c.add(where, f+".InputType", "is required with %s", readerGetObject)
	}
	if r.resource == readerListObjects && r.inputType != "" {
		c.add(where, f+".InputType", "is not allowed with %s, which lists objects", readerListObjects)
	}
	_, hasLoc := cfg["CSVHeaderLocation"]
	_, hasHeaders := cfg["CSVHeaders"]
	_, hasDelim := cfg["CSVDelimiter"]
	if r.inputType != "CSV" && (hasLoc || hasHeaders || hasDelim) {
		c.add(where, f, "CSVHeaderLocation, CSVHeaders and CSVDelimiter are allowed only with InputType CSV")
	}
	r.headerLocation = c.enum(cfg, where, f, "CSVHeaderLocation", "FIRST_ROW", "FIRST_ROW", "GIVEN")
	if hasHeaders {
		list, ok := cfg["CSVHeaders"].([]any)
		for _, h := range list {
			s, isStr := h.(string)
			if !isStr {
				ok = false
			}
			r.headers = append(r.headers, s)
		}
		if !ok || len(list) == 0 {
			c.add(where, f+".CSVHeaders", "must be a non-empty array of strings")
		}
	}
	switch {
	case r.headerLocation == "GIVEN" && !hasHeaders:
		c.add(where, f+".CSVHeaders", "is required when CSVHeaderLocation is GIVEN")
	case r.headerLocation != "GIVEN" && hasHeaders:
		c.add(where, f+".CSVHeaders", "is allowed only when CSVHeaderLocation is GIVEN")
	}
	delims := map[string]rune{"COMMA": ',', "PIPE": '|', "SEMICOLON": ';', "SPACE": ' ', "TAB": '\t'}
	r.delimiter = delims[c.enum(cfg, where, f, "CSVDelimiter", "COMMA", "COMMA", "PIPE", "SEMICOLON", "SPACE", "TAB")]
	if params == "Arguments" {
		r.jMaxItems = c.jsonataExpr(cfg, where, f, "MaxItems")
		cfg = withoutExpressions(cfg, []string{"MaxItems"})
	}
	c.exclusive(cfg, where, f, "MaxItems")
	r.maxItems = c.positive(cfg, where, f, "MaxItems", 100_000_000)
	r.maxItemsPath = c.refPathField(cfg, where, "MaxItemsPath")
	return r
}

func (c *compiler) itemBatcher(v any, where string, isJSONata bool) *itemBatcher {
	const f = "ItemBatcher"
	m, ok := c.object(v, where, f, "MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath", "BatchInput")
	if !ok {
		return nil
	}
	b := &itemBatcher{}
	if isJSONata {
		b.jMaxItems = c.jsonataExpr(m, where, f, "MaxItemsPerBatch")
		b.jMaxBytes = c.jsonataExpr(m, where, f, "MaxInputBytesPerBatch")
		m = withoutExpressions(m, []string{"MaxItemsPerBatch", "MaxInputBytesPerBatch"})
	}
	c.exclusive(m, where, f, "MaxItemsPerBatch")
	c.exclusive(m, where, f, "MaxInputBytesPerBatch")
	b.maxItems = c.positive(m, where, f, "MaxItemsPerBatch", 0)
	b.maxItemsPath = c.refPathField(m, where, "MaxItemsPerBatchPath")
	b.maxBytes = c.positive(m, where, f, "MaxInputBytesPerBatch", MaxPayloadBytes)
	b.maxBytesPath = c.refPathField(m, where, "MaxInputBytesPerBatchPath")
	if b.maxItems == 0 && b.maxItemsPath == nil && b.maxBytes == 0 && b.maxBytesPath == nil && b.jMaxItems == nil && b.jMaxBytes == nil {
		c.add(where, f, "needs at least one of MaxItemsPerBatch(Path) or MaxInputBytesPerBatch(Path)")
	}
	if bi, ok := m["BatchInput"]; ok {
		if _, isObj := bi.(map[string]any); !isObj {
			c.add(where, f+".BatchInput", "must be an object")
		} else if isJSONata {
			b.jBatchInput = c.jvalue(bi, where, f+"/BatchInput")
		} else {
			b.batchInput = c.template(bi, where, f+".BatchInput")
		}
	}
	return b
}

func (c *compiler) resultWriter(v any, where, params string) *resultWriter {
	const f = "ResultWriter"
	m, ok := c.object(v, where, f, "Resource", params, "WriterConfig")
	if !ok {
		return nil
	}
	w := &resultWriter{outputType: "JSON", transformation: "NONE"}
	res, hasRes := m["Resource"]
	p, hasParams := m[params]
	switch {
	case hasRes && res != writerPutObject:
		c.add(where, f+".Resource", "must be %q", writerPutObject)
	case hasRes && !hasParams:
		c.add(where, f+"."+params, "is required with Resource (Bucket and Prefix)")
	case !hasRes && hasParams:
		c.add(where, f+".Resource", "is required with %s", params)
	}
	if hasParams {
		switch _, isObj := p.(map[string]any); {
		case !isObj:
			c.add(where, f+"."+params, "must be an object")
		case params == "Arguments":
			w.args = c.jvalue(p, where, f+"/Arguments")
		default:
			w.params = c.template(p, where, f+".Parameters")
		}
	}
	if wc, ok := m["WriterConfig"]; ok {
		cfg, ok := c.object(wc, where, f+".WriterConfig", "OutputType", "Transformation")
		if ok {
			w.outputType = c.enum(cfg, where, f+".WriterConfig", "OutputType", "JSON", "JSON", "JSONL")
			w.transformation = c.enum(cfg, where, f+".WriterConfig", "Transformation", "NONE", "NONE", "COMPACT", "FLATTEN")
		}
	} else if !hasRes {
		c.add(where, f, "needs Resource and Parameters, or WriterConfig")
	}
	return w
}
