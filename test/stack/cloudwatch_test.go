package stack

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go/encoding/cbor"
)

// alarmARN is a CloudWatch alarm's ARN, the resource IAM checks its
// actions on.
func alarmARN(name string) string {
	return fmt.Sprintf("arn:aws:cloudwatch:%s:%s:alarm:%s", laneRegion, laneAccount, name)
}

// cloudWatch serves the alarm management the api does for connector sites
// (sqsrelay's DLQ alarms: PutMetricAlarm, DeleteAlarms) over CloudWatch's
// RPC v2 CBOR protocol (POST /service/<service>/operation/<op>, CBOR
// bodies, a smithy-protocol header on every answer), authorised on each
// alarm's ARN as CloudWatch does.
func (a *awsEndpoint) cloudWatch(w http.ResponseWriter, r *http.Request, p principal, body []byte) {
	op := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	v, err := cbor.Decode(body)
	req, ok := v.(cbor.Map)
	if err != nil || !ok {
		cborError(w, http.StatusBadRequest, "ValidationError", fmt.Sprintf("the request body is not a CBOR map: %v", err))
		return
	}
	var names []string
	switch op {
	case "PutMetricAlarm":
		if s, ok := req["AlarmName"].(cbor.String); ok {
			names = append(names, string(s))
		}
	case "DeleteAlarms":
		list, _ := req["AlarmNames"].(cbor.List)
		for _, n := range list {
			if s, ok := n.(cbor.String); ok {
				names = append(names, string(s))
			}
		}
	default:
		cborError(w, http.StatusBadRequest, "UnknownOperationException", "the lane's CloudWatch serves PutMetricAlarm and DeleteAlarms, not "+op)
		return
	}
	if len(names) == 0 {
		cborError(w, http.StatusBadRequest, "ValidationError", op+" names no alarm")
		return
	}
	var calls []call
	for _, n := range names {
		calls = append(calls, call{Action: "cloudwatch:" + op, Resource: alarmARN(n)})
	}
	if !a.authorize(w, p, calls) {
		return
	}
	a.mu.Lock()
	if a.alarms == nil {
		a.alarms = map[string]bool{}
	}
	for _, n := range names {
		// PutMetricAlarm creates or replaces; DeleteAlarms of an alarm
		// that does not exist succeeds, as CloudWatch's does.
		a.alarms[n] = op == "PutMetricAlarm"
	}
	a.mu.Unlock()
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{}))
}

// cborError is an RPC v2 CBOR protocol error: the error's type in __type.
func cborError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.WriteHeader(status)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)}))
}
