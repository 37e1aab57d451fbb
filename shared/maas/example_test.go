package maas_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// A stand-in region that refuses a deploy the way MAAS does.
func exampleRegion() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path + "?op=" + r.URL.Query().Get("op") {
		case "/MAAS/api/2.0/machines/k3tgaq/?op=deploy":
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, "Can't deploy a machine that is in the 'Failed deployment' state")
		case "/MAAS/api/2.0/machines/k3tgaq/?op=release":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, "<html><body>Conflict</body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
}

// The client classifies every answer into a typed error and returns at
// once: deciding whether to retry is the caller's (the ASL's) business.
func ExampleClient_Deploy() {
	region := exampleRegion()
	defer region.Close()

	client, err := maas.NewClient(region.URL+"/MAAS", domain.Secret("consumer:token:secret"))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Every call's deadline comes from its context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err = client.Deploy(ctx, "k3tgaq", maas.MachineDeployParams{
		UserData:     domain.Secret("#cloud-config\n"), // sent base64-encoded, never printed
		DistroSeries: "jammy",
	})
	var conflict *maas.MAASConflictError
	if errors.As(err, &conflict) {
		fmt.Println(err)
	}

	_, err = client.Release(ctx, "k3tgaq", maas.MachineReleaseParams{Erase: true})
	var unavailable *maas.MAASUnavailableError
	if errors.As(err, &unavailable) && unavailable.RetryAfter > 0 {
		// MAAS's DB-conflict 409 asks for a retry: the client reports it as
		// MAAS being briefly unavailable, a retryable class.
		fmt.Println("retry after", unavailable.RetryAfter, "seconds:", unavailable.Class())
	}
	// Output:
	// maas deploy k3tgaq: conflict: Can't deploy a machine that is in the 'Failed deployment' state
	// retry after 5 seconds: retryable
}

// A malformed key is refused without repeating it.
func ExampleNewClient_malformedKey() {
	_, err := maas.NewClient("http://maas.example:5240/MAAS", domain.Secret("only-two:parts"))
	fmt.Println(err)
	// Output:
	// maas: malformed API key: want consumer_key:token_key:token_secret (got 2 parts)
}
