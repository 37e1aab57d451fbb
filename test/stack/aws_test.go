package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	minidyn "github.com/truora/minidyn/server"

	"github.com/maasflow/maasflow/shared/asl"
)

// call is one AWS API call a principal made: the IAM action and the
// resources it is authorised on.
type call struct {
	Principal string // the function, or the assumed role's logical ID
	Role      string // the principal's role logical ID
	Action    string // e.g. dynamodb:Query
	Resource  string
	Allowed   bool
}

// principal is who holds an access key id: a function's role, or a session
// of an assumed role with its session tags.
type principal struct {
	name string // function name, or the role's logical ID for a session
	role string // the role's logical ID
	tags map[string]string
}

// awsEndpoint stands in for the AWS APIs the functions call. It reads the
// caller from the SigV4 Authorization header's access key id, authorises
// each call with the caller's role policy in the template, and records it.
type awsEndpoint struct {
	dynamo http.Handler
	engine *asl.Engine
	iam    *policies

	mu       sync.Mutex
	keys     map[string]principal
	calls    []call
	denied   []call
	faults   []string                   // DynamoDB errors other than failed conditions
	indexes  map[string]map[string]bool // table → its declared indexes
	events   []putEvent
	secrets  map[string]string // name → value
	tokenSMs map[string][]string
	queues   map[string]*sqsQueue // by name
	alarms   map[string]bool      // alarm name → whether it exists
}

// putEvent is one PutEvents entry as the bus got it.
type putEvent struct {
	Principal  string
	Bus        string
	Source     string
	DetailType string
	Detail     string
}

func newAWSEndpoint(iam *policies) *awsEndpoint {
	return &awsEndpoint{
		dynamo:   minidyn.NewServer(),
		iam:      iam,
		keys:     map[string]principal{},
		secrets:  map[string]string{},
		tokenSMs: map[string][]string{},
	}
}

var credentialRE = regexp.MustCompile(`Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/aws4_request`)

func (a *awsEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		awsError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "no SigV4 credential")
		return
	}
	a.mu.Lock()
	p, ok := a.keys[m[1]]
	a.mu.Unlock()
	if !ok {
		awsError(w, http.StatusForbidden, "UnrecognizedClientException", "unknown access key "+m[1])
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndex(op, "."); i >= 0 {
		op = op[i+1:]
	}
	switch m[2] {
	case "dynamodb":
		if !a.authorize(w, p, dynamoCalls(op, body)) {
			return
		}
		if msg := a.checkIndex(body); msg != "" {
			// DynamoDB's answer for an index the table does not have.
			a.mu.Lock()
			a.faults = append(a.faults, fmt.Sprintf("dynamodb %s by %s: %s", op, p.name, msg))
			a.mu.Unlock()
			awsError(w, http.StatusBadRequest, "ValidationException", msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(emptyListsAsNull(body)))
		// DynamoDB signs its answers with a CRC32 the SDK checks.
		rec := httptest.NewRecorder()
		a.dynamo.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if rec.Code >= 400 {
			var e struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			// A failed condition is the store's concurrency control, not a fault.
			if !strings.Contains(e.Type, "ConditionalCheckFailed") && !strings.Contains(e.Type, "TransactionCanceled") {
				a.mu.Lock()
				a.faults = append(a.faults, fmt.Sprintf("dynamodb %s by %s: %s %s", op, p.name, e.Type, e.Message))
				a.mu.Unlock()
			}
		}
		out := restoreEmptyMaps(rec.Body.Bytes())
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	case "events":
		a.putEvents(w, p, op, body)
	case "secretsmanager":
		a.secretsManager(w, p, op, body)
	case "sts":
		a.sts(w, r, p, body)
	case "states":
		a.states(w, p, op, body)
	case "kms":
		a.kms(w, p, op, body)
	case "sqs":
		a.sqs(w, p, op, body)
	case "monitoring":
		a.cloudWatch(w, r, p, body)
	default:
		awsError(w, http.StatusBadRequest, "UnknownOperationException", "the lane serves no "+m[2])
	}
}

// authorize records the calls and answers AccessDenied for the first one
// the principal's policy does not allow.
func (a *awsEndpoint) authorize(w http.ResponseWriter, p principal, calls []call) bool {
	ok := true
	var denied call
	for i := range calls {
		calls[i].Principal, calls[i].Role = p.name, p.role
		calls[i].Allowed = a.iam.allows(p, calls[i].Action, calls[i].Resource)
		if !calls[i].Allowed && ok {
			ok, denied = false, calls[i]
		}
	}
	a.mu.Lock()
	a.calls = append(a.calls, calls...)
	if !ok {
		a.denied = append(a.denied, denied)
	}
	a.mu.Unlock()
	if !ok {
		awsError(w, http.StatusBadRequest, "AccessDeniedException", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s",
			p.name, denied.Action, denied.Resource))
	}
	return ok
}

func tableARN(name string) string {
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", laneRegion, laneAccount, name)
}

// dynamoCalls lists what IAM authorises for one DynamoDB request: a
// transaction is authorised item by item, an index query on the index.
func dynamoCalls(op string, body []byte) []call {
	var req struct {
		TableName     string
		IndexName     string
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]struct{ TableName string }
	}
	_ = json.Unmarshal(body, &req)
	var out []call
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		for _, item := range req.TransactItems {
			for kind, x := range item {
				action := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
					"ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}[kind]
				out = append(out, call{Action: "dynamodb:" + action, Resource: tableARN(x.TableName)})
			}
		}
	case "BatchWriteItem", "BatchGetItem":
		for t := range req.RequestItems {
			out = append(out, call{Action: "dynamodb:" + op, Resource: tableARN(t)})
		}
	default:
		res := tableARN(req.TableName)
		if req.IndexName != "" {
			res += "/index/" + req.IndexName
		}
		out = append(out, call{Action: "dynamodb:" + op, Resource: res})
	}
	return out
}

func busARN(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	if nameOrARN == "" {
		nameOrARN = "default"
	}
	return fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", laneRegion, laneAccount, nameOrARN)
}

func (a *awsEndpoint) putEvents(w http.ResponseWriter, p principal, op string, body []byte) {
	if op != "PutEvents" {
		awsError(w, http.StatusBadRequest, "UnknownOperationException", op)
		return
	}
	var req struct {
		Entries []struct{ Source, DetailType, Detail, EventBusName string }
	}
	if err := json.Unmarshal(body, &req); err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	var calls []call
	for _, e := range req.Entries {
		calls = append(calls, call{Action: "events:PutEvents", Resource: busARN(e.EventBusName)})
	}
	if !a.authorize(w, p, calls) {
		return
	}
	type entry struct{ EventId string }
	out := struct {
		FailedEntryCount int
		Entries          []entry
	}{}
	a.mu.Lock()
	for _, e := range req.Entries {
		a.events = append(a.events, putEvent{Principal: p.name, Bus: e.EventBusName, Source: e.Source, DetailType: e.DetailType, Detail: e.Detail})
		out.Entries = append(out.Entries, entry{EventId: uuid.NewString()})
	}
	a.mu.Unlock()
	writeJSON(w, out)
}

// secretARN is a secret's ARN: its name, "-" and six random characters.
func secretARN(name string) string {
	return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-AbCdEf", laneRegion, laneAccount, name)
}

func (a *awsEndpoint) secretsManager(w http.ResponseWriter, p principal, op string, body []byte) {
	var req struct {
		Name, SecretId, SecretString string
	}
	_ = json.Unmarshal(body, &req)
	name := req.SecretId
	if op == "CreateSecret" {
		name = req.Name
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "arn:aws:secretsmanager:"+laneRegion+":"+laneAccount+":secret:"), "-AbCdEf")
	if !a.authorize(w, p, []call{{Action: "secretsmanager:" + op, Resource: secretARN(name)}}) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, exists := a.secrets[name]
	switch op {
	case "CreateSecret":
		if exists {
			awsError(w, http.StatusBadRequest, "ResourceExistsException", "the secret "+name+" already exists")
			return
		}
		a.secrets[name] = req.SecretString
	case "PutSecretValue":
		if !exists {
			awsError(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		a.secrets[name] = req.SecretString
	case "GetSecretValue":
		if !exists {
			awsError(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
			return
		}
		writeJSON(w, map[string]any{"ARN": secretARN(name), "Name": name, "SecretString": a.secrets[name], "VersionId": "v1"})
		return
	default:
		awsError(w, http.StatusBadRequest, "UnknownOperationException", op)
		return
	}
	writeJSON(w, map[string]any{"ARN": secretARN(name), "Name": name, "VersionId": "v1"})
}

// sts serves AssumeRole (query protocol): a new access key id for a
// session of the role, carrying its session tags.
func (a *awsEndpoint) sts(w http.ResponseWriter, r *http.Request, p principal, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "AssumeRole" {
		awsError(w, http.StatusBadRequest, "InvalidAction", "the lane serves only AssumeRole")
		return
	}
	roleARN := r.PostForm.Get("RoleArn")
	tags := map[string]string{}
	for i := 1; ; i++ {
		k := r.PostForm.Get(fmt.Sprintf("Tags.member.%d.Key", i))
		if k == "" {
			break
		}
		tags[k] = r.PostForm.Get(fmt.Sprintf("Tags.member.%d.Value", i))
	}
	calls := []call{{Action: "sts:AssumeRole", Resource: roleARN}}
	if len(tags) > 0 {
		calls = append(calls, call{Action: "sts:TagSession", Resource: roleARN})
	}
	if !a.authorize(w, p, calls) {
		return
	}
	role := a.iam.roleByARN(roleARN)
	if role == "" {
		awsError(w, http.StatusForbidden, "AccessDenied", "no role "+roleARN+" in the template")
		return
	}
	if !a.iam.trusts(role, p.role) {
		a.mu.Lock()
		a.denied = append(a.denied, call{Principal: p.name, Action: "sts:AssumeRole (trust policy)", Resource: roleARN})
		a.mu.Unlock()
		awsError(w, http.StatusForbidden, "AccessDenied", p.name+" is not trusted by "+roleARN)
		return
	}
	key := "ASIA" + strings.ToUpper(strings.ReplaceAll(uuid.NewString(), "-", ""))[:16]
	a.mu.Lock()
	a.keys[key] = principal{name: role, role: role, tags: tags}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	_, _ = fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>`+
		`<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>lane-secret</SecretAccessKey><SessionToken>lane-session</SessionToken>`+
		`<Expiration>%s</Expiration></Credentials><AssumedRoleUser><Arn>%s/lane</Arn><AssumedRoleId>AROA:lane</AssumedRoleId></AssumedRoleUser>`+
		`</AssumeRoleResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></AssumeRoleResponse>`,
		key, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), roleARN, uuid.NewString())
}

// states serves the Step Functions API over the embedded runtime.
func (a *awsEndpoint) states(w http.ResponseWriter, p principal, op string, body []byte) {
	var req struct {
		StateMachineArn string `json:"stateMachineArn"`
		ExecutionArn    string `json:"executionArn"`
		Name            string `json:"name"`
		Input           string `json:"input"`
		TaskToken       string `json:"taskToken"`
		Output          string `json:"output"`
		Error           string `json:"error"`
		Cause           string `json:"cause"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	var resources []string
	switch op {
	case "StartExecution":
		resources = []string{req.StateMachineArn}
	case "StopExecution", "DescribeExecution":
		resources = []string{req.ExecutionArn}
	case "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat":
		// Authorised on the state machine that issued the token.
		a.mu.Lock()
		resources = a.tokenSMs[req.TaskToken]
		a.mu.Unlock()
		if len(resources) == 0 {
			resources = []string{"arn:aws:states:" + laneRegion + ":" + laneAccount + ":stateMachine:unknown-token"}
		}
	default:
		awsError(w, http.StatusBadRequest, "UnknownOperationException", op)
		return
	}
	var calls []call
	for _, res := range resources {
		calls = append(calls, call{Action: "states:" + op, Resource: res})
	}
	if !a.authorize(w, p, calls) {
		return
	}
	var err error
	var out any = map[string]any{}
	switch op {
	case "StartExecution":
		var arn string
		if arn, err = a.engine.StartExecution(context.Background(), req.StateMachineArn, req.Name, []byte(req.Input)); err == nil {
			out = map[string]any{"executionArn": arn, "startDate": float64(time.Now().UnixMilli()) / 1000}
		}
	case "StopExecution":
		if err = a.engine.StopExecution(req.ExecutionArn, req.Error, req.Cause); err == nil {
			out = map[string]any{"stopDate": float64(time.Now().UnixMilli()) / 1000}
		}
	case "DescribeExecution":
		var x asl.Execution
		if x, err = a.engine.DescribeExecution(req.ExecutionArn); err == nil {
			d := map[string]any{"executionArn": x.ExecutionARN, "stateMachineArn": x.StateMachineARN, "name": x.Name,
				"status": x.Status, "input": x.Input, "startDate": float64(x.StartDate.UnixMilli()) / 1000}
			if x.Output != "" {
				d["output"] = x.Output
			}
			if !x.StopDate.IsZero() {
				d["stopDate"] = float64(x.StopDate.UnixMilli()) / 1000
			}
			if x.Error != "" {
				d["error"], d["cause"] = x.Error, x.Cause
			}
			out = d
		}
	case "SendTaskSuccess":
		err = a.engine.SendTaskSuccess(req.TaskToken, []byte(req.Output))
	case "SendTaskFailure":
		err = a.engine.SendTaskFailure(req.TaskToken, req.Error, req.Cause)
	case "SendTaskHeartbeat":
		err = a.engine.SendTaskHeartbeat(req.TaskToken)
	}
	if err != nil {
		awsError(w, http.StatusBadRequest, sfnErrorCode(err), err.Error())
		return
	}
	writeJSON(w, out)
}

// sfnErrorCode is the Step Functions API error code of an engine error.
func sfnErrorCode(err error) string {
	var (
		exists  *asl.ExecutionAlreadyExistsError
		noSM    *asl.StateMachineDoesNotExistError
		noExec  *asl.ExecutionDoesNotExistError
		token   *asl.InvalidTokenError
		timeout *asl.TaskTimedOutError
		name    *asl.InvalidNameError
		input   *asl.InvalidExecutionInputError
		output  *asl.InvalidOutputError
	)
	switch {
	case errors.As(err, &exists):
		return "ExecutionAlreadyExists"
	case errors.As(err, &noSM):
		return "StateMachineDoesNotExist"
	case errors.As(err, &noExec):
		return "ExecutionDoesNotExist"
	case errors.As(err, &token):
		return "InvalidToken"
	case errors.As(err, &timeout):
		return "TaskTimedOut"
	case errors.As(err, &name):
		return "InvalidName"
	case errors.As(err, &input):
		return "InvalidExecutionInput"
	case errors.As(err, &output):
		return "InvalidOutput"
	}
	return "InternalServerError"
}

func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

// snapshot returns the recorded calls and denials.
func (a *awsEndpoint) snapshot() (calls, denied []call) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]call(nil), a.calls...), append([]call(nil), a.denied...)
}

func (a *awsEndpoint) putEvents_() []putEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]putEvent(nil), a.events...)
}

// describeCalls lists calls one per line, sorted, for messages.
func describeCalls(cs []call) string {
	var lines []string
	for _, c := range cs {
		lines = append(lines, c.Principal+" "+c.Action+" "+c.Resource)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkIndex refuses a request for an index its table does not declare
// (minidyn's server does not check).
func (a *awsEndpoint) checkIndex(body []byte) string {
	var req struct{ TableName, IndexName string }
	_ = json.Unmarshal(body, &req)
	if req.IndexName == "" {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ix, ok := a.indexes[req.TableName]; ok && !ix[req.IndexName] {
		return "The table does not have the specified index: " + req.IndexName
	}
	return ""
}

// emptyListsAsNull writes an empty list or map attribute ({"L":[]},
// {"M":{}}) as NULL: minidyn's server would keep it as a value of no type
// ({} below), which its expression interpreter then refuses on every Query
// and condition that reads the item ("value type is not supported yet"). A
// Go slice or map decodes NULL as nil, which the records treat as empty.
func emptyListsAsNull(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"L":[]`)) && !bytes.Contains(body, []byte(`"M":{}`)) {
		return body
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return body
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			if l, ok := t["L"].([]any); ok && len(t) == 1 && len(l) == 0 {
				return map[string]any{"NULL": true}
			}
			if m, ok := t["M"].(map[string]any); ok && len(t) == 1 && len(m) == 0 {
				return map[string]any{"NULL": true}
			}
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return body
	}
	return out
}

// restoreEmptyMaps puts back the {"M":{}} minidyn's server writes as {}
// (its attribute value's M is omitempty): the SDK cannot decode an
// attribute value with no member, and DynamoDB never sends one. Empty
// lists are stored as NULL (emptyListsAsNull), so {} is always a map.
func restoreEmptyMaps(body []byte) []byte {
	if !bytes.Contains(body, []byte("{}")) {
		return body
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return body
	}
	fixItem := func(item any) {
		if m, ok := item.(map[string]any); ok {
			for k, av := range m {
				m[k] = fixValue(av)
			}
		}
	}
	for _, key := range []string{"Item", "Attributes"} {
		fixItem(v[key])
	}
	if items, ok := v["Items"].([]any); ok {
		for _, it := range items {
			fixItem(it)
		}
	}
	if resp, ok := v["Responses"].(map[string]any); ok {
		for _, list := range resp {
			if items, ok := list.([]any); ok {
				for _, it := range items {
					fixItem(it)
				}
			}
		}
	}
	if resp, ok := v["Responses"].([]any); ok { // TransactGetItems
		for _, r := range resp {
			if m, ok := r.(map[string]any); ok {
				fixItem(m["Item"])
			}
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

func fixValue(av any) any {
	m, ok := av.(map[string]any)
	if !ok {
		return av
	}
	if len(m) == 0 {
		return map[string]any{"M": map[string]any{}}
	}
	if inner, ok := m["M"].(map[string]any); ok {
		for k, x := range inner {
			inner[k] = fixValue(x)
		}
	}
	if list, ok := m["L"].([]any); ok {
		for i, x := range list {
			list[i] = fixValue(x)
		}
	}
	return m
}
