package stack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// sqsQueue is one queue the lane's SQS holds.
type sqsQueue struct {
	attrs, tags map[string]string
}

func sqsQueueURL(name string) string {
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", laneRegion, laneAccount, name)
}

// sqs serves the queue management the api does for connector sites
// (sqsrelay.Queues: create, read and set attributes, tags, delete), over
// the AWS JSON protocol, authorised on each queue's ARN as SQS does.
func (a *awsEndpoint) sqs(w http.ResponseWriter, p principal, op string, body []byte) {
	var req struct {
		QueueName  string
		QueueURL   string `json:"QueueUrl"`
		Attributes map[string]string
		Tags       map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		awsError(w, http.StatusBadRequest, "com.amazonaws.sqs#InvalidParameterValue", err.Error())
		return
	}
	name := req.QueueName
	if req.QueueURL != "" {
		name = req.QueueURL[strings.LastIndexByte(req.QueueURL, '/')+1:]
	}
	arn := queueARN(sqsQueueURL(name))
	calls := []call{{Action: "sqs:" + op, Resource: arn}}
	if op == "CreateQueue" && len(req.Tags) > 0 {
		calls = append(calls, call{Action: "sqs:TagQueue", Resource: arn})
	}
	if !a.authorize(w, p, calls) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.queues == nil {
		a.queues = map[string]*sqsQueue{}
	}
	q, exists := a.queues[name]
	if !exists && op != "CreateQueue" {
		awsError(w, http.StatusBadRequest, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.")
		return
	}
	switch op {
	case "CreateQueue":
		if !exists {
			q = &sqsQueue{attrs: map[string]string{}, tags: map[string]string{}}
			a.queues[name] = q
		}
		for k, v := range req.Attributes {
			q.attrs[k] = v
		}
		for k, v := range req.Tags {
			q.tags[k] = v
		}
		writeJSON(w, map[string]any{"QueueUrl": sqsQueueURL(name)})
	case "GetQueueUrl":
		writeJSON(w, map[string]any{"QueueUrl": sqsQueueURL(name)})
	case "GetQueueAttributes":
		out := map[string]string{"QueueArn": arn}
		for k, v := range q.attrs {
			out[k] = v
		}
		writeJSON(w, map[string]any{"Attributes": out})
	case "SetQueueAttributes":
		for k, v := range req.Attributes {
			q.attrs[k] = v
		}
		writeJSON(w, map[string]any{})
	case "ListQueueTags":
		writeJSON(w, map[string]any{"Tags": q.tags})
	case "DeleteQueue":
		delete(a.queues, name)
		writeJSON(w, map[string]any{})
	default:
		awsError(w, http.StatusBadRequest, "UnknownOperationException", "the lane's SQS serves queue management, not "+op)
	}
}
