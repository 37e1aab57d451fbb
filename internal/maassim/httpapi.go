package maassim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	apiPrefix = "/MAAS/api/2.0/"
	// apiHash is sent as X-MAAS-API-Hash on every answer, as MAAS does.
	apiHash = "6ab7dbbbbd5b2b5ac4f4e3b7c0d5e7f1a3c9e2d4"
)

// reply is a complete HTTP answer, built under the state lock and written
// after it is released.
type reply struct {
	code   int
	ctype  string
	body   []byte
	header http.Header
	// pooled holds body when it is a JSON encoding from replyBuffers; it
	// goes back to the pool once the reply is written.
	pooled *bytes.Buffer
}

// replyBuffers hold JSON replies from their encoding until they are
// written: a machine object is several kilobytes, which json.Marshal would
// copy out of its own buffer into a new slice for every reply.
var replyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// jsonType is the Content-Type of MAAS's JSON replies.
const jsonType = "application/json; charset=utf-8"

func jsonReply(code int, v any) reply {
	buf, _ := replyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		replyBuffers.Put(buf)
		return textReply(http.StatusInternalServerError, "internal error: "+err.Error())
	}
	// The same bytes as json.Marshal, which adds no newline after the value.
	body := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	return reply{code: code, ctype: jsonType, body: body, pooled: buf}
}

func textReply(code int, msg string) reply {
	return reply{code: code, ctype: "text/plain; charset=utf-8", body: []byte(msg)}
}

// formError is MAAS's validation error: 400 with {"field": ["msg"]},
// spaced as Python's json.dumps writes it, since clients match on the text.
func formError(field, msg string) reply {
	return formErrors([]fieldError{{field, msg}})
}

// fieldError is one field's message in a form error.
type fieldError struct{ field, msg string }

// formErrors is a form error naming several fields, in the order Django
// collects them: field errors in field order, then those of the form's
// clean(). One message per field.
func formErrors(errs []fieldError) reply {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		k, _ := json.Marshal(e.field)
		v, _ := json.Marshal(e.msg)
		parts = append(parts, fmt.Sprintf("%s: [%s]", k, v))
	}
	body := "{" + strings.Join(parts, ", ") + "}"
	return reply{code: http.StatusBadRequest, ctype: "application/json; charset=utf-8", body: []byte(body)}
}

// forbidden is MAAS's usual 403: an empty body.
func forbidden() reply { return textReply(http.StatusForbidden, "") }

func conflict(msg string) reply { return textReply(http.StatusConflict, msg) }

func badRequest(msg string) reply { return textReply(http.StatusBadRequest, msg) }

func notFound(model string) reply {
	return textReply(http.StatusNotFound, fmt.Sprintf("No %s matches the given query.", model))
}

func (rp reply) write(w http.ResponseWriter) {
	if rp.pooled != nil {
		defer replyBuffers.Put(rp.pooled)
	}
	h := w.Header()
	for k, vs := range rp.header {
		h[k] = vs
	}
	h.Set("X-MAAS-API-Hash", apiHash)
	if rp.code == http.StatusNoContent {
		w.WriteHeader(rp.code)
		return
	}
	h.Set("Content-Type", rp.ctype)
	h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	w.WriteHeader(rp.code)
	_, _ = w.Write(rp.body)
}

// request is one MAAS API call after routing and authentication.
type request struct {
	http   *http.Request
	method string
	op     string
	params url.Values
	vars   []string
	user   string
	now    time.Time
}

// flag reads a Django BooleanField: false, 0 and empty mean false, anything
// else true (maas-behaviour §2).
func (rq *request) flag(key string) bool {
	v := strings.ToLower(strings.TrimSpace(rq.params.Get(key)))
	return v != "" && v != "false" && v != "0"
}

// stringBool reads a formencode StringBool handler flag.
func (rq *request) stringBool(key string) (bool, *reply) {
	v := strings.ToLower(strings.TrimSpace(rq.params.Get(key)))
	switch v {
	case "":
		return false, nil
	case "true", "yes", "on", "1", "t", "y":
		return true, nil
	case "false", "no", "off", "0", "f", "n":
		return false, nil
	}
	rp := badRequest(fmt.Sprintf("Invalid %s: Value should be 'true' or 'false'", key))
	return false, &rp
}

type handler func(s *Simulator, rq *request) reply

// resource maps "METHOD op" ("GET " for a plain read) to its handler.
type resource map[string]handler

// route is a resolved MAAS path.
type route struct {
	template string
	vars     []string
	res      resource
	// anonRead: piston dispatches an unauthenticated GET to the anonymous
	// handler, which has no read, so MAAS answers 400, not 401 (maas-behaviour §1).
	anonRead bool
	anon     map[string]bool
}

func (s *Simulator) serveMAAS(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/MAAS/api/version/" || p == "/MAAS/api/version":
		textReply(http.StatusOK, "2.0").write(w)
		return
	case strings.HasPrefix(p, "/MAAS/api/1.0/"):
		textReply(http.StatusGone, "The 1.0 API is no longer available. Please use API version 2.0.").write(w)
		return
	case !strings.HasPrefix(p, apiPrefix):
		textReply(http.StatusNotFound, "Not Found").write(w)
		return
	}
	// Django's APPEND_SLASH (maas-behaviour §1); the …/op-<name> form needs none.
	if !strings.HasSuffix(p, "/") && !strings.HasPrefix(p[strings.LastIndex(p, "/")+1:], "op-") {
		u := *r.URL
		u.Path = p + "/"
		w.Header().Set("Location", u.RequestURI())
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	segs := strings.Split(strings.Trim(strings.TrimPrefix(p, apiPrefix), "/"), "/")
	op := ""
	if n := len(segs); n > 0 && strings.HasPrefix(segs[n-1], "op-") {
		op = strings.TrimPrefix(segs[n-1], "op-")
		segs = segs[:n-1]
	}
	rt, ok := resolve(segs)
	if !ok {
		s.countCall(r.Method, p, "")
		textReply(http.StatusNotFound, "Not Found").write(w)
		return
	}

	params, err := readParams(r)
	if err != nil {
		s.countCall(r.Method, rt.template, op)
		badRequest("Bad request body: " + err.Error()).write(w)
		return
	}
	if op == "" {
		op = r.URL.Query().Get("op")
	}
	if op == "" && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
		op = params.Get("op")
	}
	s.countCall(r.Method, rt.template, op)

	if !s.injectFaults(w, r) {
		return
	}

	user, authFail := s.authenticate(r)
	if authFail != nil {
		authFail.write(w)
		return
	}
	key := r.Method + " " + op
	if user == "" && !rt.anon[key] {
		if rt.anonRead && r.Method == http.MethodGet && op == "" {
			badRequest("Unrecognised signature: method=GET op=None").write(w)
			return
		}
		rp := textReply(http.StatusUnauthorized, "Forbidden")
		rp.header = http.Header{"Www-Authenticate": {`OAuth realm="MAAS API"`}}
		rp.write(w)
		return
	}
	h, ok := rt.res[key]
	if !ok {
		methodKnown := false
		for k := range rt.res {
			if strings.HasPrefix(k, r.Method+" ") {
				methodKnown = true
				break
			}
		}
		if !methodKnown {
			textReply(http.StatusMethodNotAllowed, "Method Not Allowed").write(w)
			return
		}
		shown := op
		if shown == "" {
			shown = "None"
		}
		badRequest(fmt.Sprintf("Unrecognised signature: method=%s op=%s", r.Method, shown)).write(w)
		return
	}

	rq := &request{http: r, method: r.Method, op: op, params: params, vars: rt.vars, user: user}
	s.mu.Lock()
	rq.now = s.now()
	s.advanceLocked(rq.now)
	var rp reply
	if refused := s.refuseNonAdmin(rt, key, user); refused != nil {
		rp = *refused
	} else {
		rp = h(s, rq)
	}
	s.mu.Unlock()
	rp.write(w)
	// Never the query or body: they carry BMC passwords and user_data.
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.Debug("maas call", "method", r.Method, "path", rt.template, "op", op, "status", rp.code)
	}
}

// readParams returns the request's parameters as MAAS reads them: the query
// string for GET and DELETE, the urlencoded or multipart body for POST and
// PUT (maas-behaviour §2).
func readParams(r *http.Request) (url.Values, error) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return r.URL.Query(), nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, err
		}
		return url.Values(r.MultipartForm.Value), nil
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		return r.PostForm, nil
	default:
		return url.Values{}, nil
	}
}

// injectFaults plays the global error and slow rates; it reports whether the
// request should go on.
func (s *Simulator) injectFaults(w http.ResponseWriter, r *http.Request) bool {
	if s.errorRate <= 0 && s.slowRate <= 0 {
		return true
	}
	s.faultMu.Lock()
	slow := s.slowRate > 0 && s.faultRNG.Float64() < s.slowRate
	fail := s.errorRate > 0 && s.faultRNG.Float64() < s.errorRate
	s.faultMu.Unlock()
	if slow && s.slowDelay > 0 {
		select {
		case <-s.clock.After(s.slowDelay):
		case <-r.Context().Done():
			return false
		case <-s.ctx.Done():
			return false
		}
	}
	if fail {
		// No Retry-After: with one, gomaasapi would silently sleep and retry.
		textReply(http.StatusServiceUnavailable, "Unable to connect to any rack controller; no connections available.").write(w)
		return false
	}
	return true
}

func resolve(segs []string) (route, bool) {
	const p = apiPrefix
	n := len(segs)
	if n == 0 || segs[0] == "" {
		return route{}, false
	}
	switch segs[0] {
	case "version":
		if n == 1 {
			return route{template: p + "version/", res: versionResource, anon: map[string]bool{"GET ": true}}, true
		}
	case "users":
		if n == 1 {
			return route{template: p + "users/", res: usersResource}, true
		}
	case "maas":
		if n == 1 {
			return route{template: p + "maas/", res: maasResource}, true
		}
	case "machines":
		switch n {
		case 1:
			return route{template: p + "machines/", res: machinesResource, anonRead: true}, true
		case 2:
			return route{template: p + "machines/{system_id}/", vars: segs[1:2], res: machineResource, anonRead: true}, true
		}
	case "nodes":
		switch {
		case n == 2:
			return route{template: p + "nodes/{system_id}/", vars: segs[1:2], res: nodeResource, anonRead: true}, true
		case n == 3 && segs[2] == "interfaces":
			return route{template: p + "nodes/{system_id}/interfaces/", vars: segs[1:2], res: interfacesResource}, true
		case n == 4 && segs[2] == "interfaces":
			return route{template: p + "nodes/{system_id}/interfaces/{id}/", vars: []string{segs[1], segs[3]}, res: interfaceResource}, true
		case n == 3 && segs[2] == "devices":
			return route{template: p + "nodes/{system_id}/devices/", vars: segs[1:2], res: nodeDevicesResource}, true
		case n == 4 && segs[2] == "devices":
			return route{template: p + "nodes/{system_id}/devices/{id}/", vars: []string{segs[1], segs[3]}, res: nodeDeviceResource}, true
		case n == 3 && segs[2] == "blockdevices":
			return route{template: p + "nodes/{system_id}/blockdevices/", vars: segs[1:2], res: blockDevicesResource}, true
		case n == 4 && segs[2] == "blockdevices":
			return route{template: p + "nodes/{system_id}/blockdevices/{id}/", vars: []string{segs[1], segs[3]}, res: blockDeviceResource}, true
		case n == 3 && segs[2] == "results":
			return route{template: p + "nodes/{system_id}/results/", vars: segs[1:2], res: resultsResource}, true
		case n == 4 && segs[2] == "results":
			return route{template: p + "nodes/{system_id}/results/{id}/", vars: []string{segs[1], segs[3]}, res: resultResource}, true
		}
	case "scripts":
		if n == 1 {
			return route{template: p + "scripts/", res: scriptsResource}, true
		}
	case "events":
		if n == 1 {
			return route{template: p + "events/", res: eventsResource}, true
		}
	case "subnets":
		switch n {
		case 1:
			return route{template: p + "subnets/", res: subnetsResource}, true
		case 2:
			return route{template: p + "subnets/{id}/", vars: segs[1:2], res: subnetResource}, true
		}
	case "fabrics":
		switch {
		case n == 1:
			return route{template: p + "fabrics/", res: fabricsResource}, true
		case n == 2:
			return route{template: p + "fabrics/{id}/", vars: segs[1:2], res: fabricResource}, true
		case n == 3 && segs[2] == "vlans":
			return route{template: p + "fabrics/{fabric_id}/vlans/", vars: segs[1:2], res: fabricVLANsResource}, true
		case n == 4 && segs[2] == "vlans":
			return route{template: p + "fabrics/{fabric_id}/vlans/{vid}/", vars: []string{segs[1], segs[3]}, res: fabricVLANResource}, true
		}
	case "vlans":
		if n == 2 {
			return route{template: p + "vlans/{id}/", vars: segs[1:2], res: vlanResource}, true
		}
	}
	return route{}, false
}
