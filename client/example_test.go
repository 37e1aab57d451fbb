package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/maasflow/maasflow/client"
)

// exampleAPI stands in for the admin API in the examples.
func exampleAPI() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/admin/onboardings" && r.URL.Query().Get("cursor") == "":
			_, _ = io.WriteString(w, `{"items":[{"id":"ob-1","hostname":"gpu-01","status":"completed"}],"next_cursor":"p2"}`)
		case r.URL.Path == "/api/v1/admin/onboardings":
			_, _ = io.WriteString(w, `{"items":[{"id":"ob-2","hostname":"gpu-02","status":"running"}],"next_cursor":""}`)
		case r.URL.Path == "/api/v1/admin/onboardings/ob-2/stream":
			// The server pushes the onboarding at once and after each change.
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: onboarding\ndata: {\"id\":\"ob-2\",\"hostname\":\"gpu-02\",\"status\":\"running\",\"stage\":\"deploy\"}\n\n"+
				": keep-alive\n\n"+
				"event: onboarding\ndata: {\"id\":\"ob-2\",\"hostname\":\"gpu-02\",\"status\":\"completed\",\"stage\":\"done\"}\n\n")
		case r.URL.Path == "/api/v1/admin/onboardings/ob-2":
			_, _ = io.WriteString(w, `{"id":"ob-2","hostname":"gpu-02","status":"completed","stage":"done"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such node","correlation_id":"c-42"}}`)
		}
	}))
}

// List every onboarding of a site, page after page.
func ExampleClient_Onboardings() {
	srv := exampleAPI()
	defer srv.Close()
	c, err := client.New(srv.URL, client.WithToken("admin-token"))
	if err != nil {
		panic(err)
	}
	for ob, err := range c.Onboardings(context.Background(), client.OnboardingFilter{SiteID: "site-1"}) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Println(ob.Hostname, ob.Status)
	}
	// Output:
	// gpu-01 completed
	// gpu-02 running
}

// Wait, at most ten minutes, for an onboarding to end.
func ExampleClient_WaitOnboarding() {
	srv := exampleAPI()
	defer srv.Close()
	c, _ := client.New(srv.URL, client.WithToken("admin-token"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ob, err := c.WaitOnboarding(ctx, "ob-2", client.WaitOptions{Interval: 5 * time.Second})
	if errors.Is(err, context.DeadlineExceeded) {
		fmt.Println("still", ob.Status, "at", ob.Stage)
		return
	}
	fmt.Println(ob.Hostname, ob.Status)
	// Output: gpu-02 completed
}

// Follow an onboarding's stages as the server pushes them.
func ExampleClient_StreamOnboarding() {
	srv := exampleAPI()
	defer srv.Close()
	c, _ := client.New(srv.URL, client.WithToken("admin-token"))
	err := c.StreamOnboarding(context.Background(), "ob-2", func(ob client.OnboardingDetail) (bool, error) {
		fmt.Println(ob.Hostname, ob.Status, ob.Stage)
		return client.Terminal(ob.Status), nil
	})
	if errors.Is(err, client.ErrStreamsUnsupported) {
		fmt.Println("this deployment does not stream: use WaitOnboarding, which polls there")
	}
	// Output:
	// gpu-02 running deploy
	// gpu-02 completed done
}

// Tell an API error by its code, and quote its correlation id.
func ExampleAPIError() {
	srv := exampleAPI()
	defer srv.Close()
	c, _ := client.New(srv.URL, client.WithToken("admin-token"))
	_, err := c.GetNode(context.Background(), "n-9")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound {
		fmt.Println(apiErr.Status, apiErr.Message, apiErr.CorrelationID)
	}
	// Output: 404 no such node c-42
}
