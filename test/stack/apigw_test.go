package stack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
)

// loadRoutes reads the HTTP API's routes and their integrations: only those
// routes are served, each by the function its integration names.
func (l *lane) loadRoutes() error {
	for _, id := range l.tpl.ofType("AWS::ApiGatewayV2::Route") {
		p := l.tpl.Resources[id].Properties
		key, _ := p["RouteKey"].(string)
		method, path, ok := strings.Cut(key, " ")
		if !ok {
			return fmt.Errorf("route %s: bad RouteKey %q", id, key)
		}
		target, err := l.res.str(p["Target"])
		if err != nil {
			return fmt.Errorf("route %s: %w", id, err)
		}
		integ := l.tpl.Resources[strings.TrimPrefix(target, "integrations/")]
		if integ == nil {
			return fmt.Errorf("route %s: target %s is no integration of the template", id, target)
		}
		if v := integ.Properties["PayloadFormatVersion"]; v != "2.0" {
			return fmt.Errorf("route %s: payload format %v, the api function reads 2.0", id, v)
		}
		uri, err := l.res.str(integ.Properties["IntegrationUri"])
		if err != nil {
			return fmt.Errorf("route %s: %w", id, err)
		}
		fn := l.byARN[uri]
		if fn == nil {
			return fmt.Errorf("route %s: integration names %s, which the template does not deploy", id, uri)
		}
		// {name} is one segment, {name+} the rest of the path.
		pat := regexp.QuoteMeta(path)
		pat = regexp.MustCompile(`\\\{[A-Za-z0-9_]+\\\+\\\}`).ReplaceAllString(pat, `.+`)
		pat = regexp.MustCompile(`\\\{[A-Za-z0-9_]+\\\}`).ReplaceAllString(pat, `[^/]+`)
		l.routes = append(l.routes, route{method: method, pattern: regexp.MustCompile("^" + pat + "$"), key: key,
			jwt: p["AuthorizationType"] == "JWT", fn: fn})
		l.apiFn = fn
	}
	// The claims a verified operator's token carries, with the group the
	// api function is told is the admin group.
	group := ""
	if l.apiFn != nil {
		for _, kv := range l.apiFn.env {
			if v, ok := strings.CutPrefix(kv, "MAASFLOW_ADMIN_GROUP="); ok {
				group = v
			}
		}
	}
	l.claims = map[string]string{"sub": "lane-operator", "cognito:groups": "[" + group + "]"}
	return nil
}

// serveAPI is API Gateway's HTTP API: route match, JWT authorization,
// the payload 2.0 event to the integration's function, its answer back.
func (l *lane) serveAPI(w http.ResponseWriter, r *http.Request) {
	var rt *route
	for i := range l.routes {
		c := &l.routes[i]
		if (c.method == "ANY" || c.method == r.Method) && c.pattern.MatchString(r.URL.Path) {
			rt = c
			break
		}
	}
	if rt == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: rt.key, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: laneAccount, APIID: "laneapi", DomainName: r.Host, RequestID: uuid.NewString(), Stage: "$default",
			RouteKey: rt.key, Time: time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: "HTTP/1.1",
				SourceIP: "127.0.0.1", UserAgent: r.UserAgent()},
		},
	}
	for k, v := range r.Header {
		req.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if len(r.URL.Query()) > 0 {
		req.QueryStringParameters = map[string]string{}
		for k, v := range r.URL.Query() {
			req.QueryStringParameters[k] = strings.Join(v, ",")
		}
	}
	if rt.jwt {
		if r.Header.Get("Authorization") != "Bearer "+laneAdminToken {
			w.Header().Set("Www-Authenticate", "Bearer")
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: l.claims},
		}
	}
	body, _ := io.ReadAll(r.Body)
	if len(body) > 0 {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	payload, _ := json.Marshal(req)
	out, ierr := rt.fn.invoke(context.Background(), payload)
	if ierr != nil {
		// HTTP API answers 500 when the integration fails.
		w.Header().Set("X-Lane-Function-Error", ierr.Type)
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	rb := []byte(resp.Body)
	if resp.IsBase64Encoded {
		rb, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rb)
}
