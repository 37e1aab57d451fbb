package localstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// nodeListener is the TLS listener of the node endpoints (/node/v1/), on
// which the node agent authenticates with its certificate.
type nodeListener struct {
	ln  net.Listener
	url string
}

// listenNodes loads (or makes) the node CA in the data dir and binds the
// node listener on addr ("127.0.0.1:0" when empty), with a server
// certificate the node CA signs at each start.
func listenNodes(ctx context.Context, dataDir, addr string, clk clock.Clock) (*nodeid.CA, *nodeListener, error) {
	ca, err := nodeid.LoadOrCreateLocal(dataDir, clk.Now().UTC())
	if err != nil {
		return nil, nil, err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s (node endpoints): %w", addr, err)
	}
	host, _, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	cert, err := ca.IssueServer(host, clk.Now().UTC())
	if err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return ca, &nodeListener{ln: tls.NewListener(ln, nodeid.ServerTLSConfig(cert)), url: "https://" + net.JoinHostPort(host, port)}, nil
}

// nodeRoutes is what the node listener serves: the node endpoints, and
// the node's own design, read there with the node's certificate.
func nodeRoutes(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/node/v1/", api)
	mux.Handle("GET /api/v1/nodes/{id}/design", api)
	return mux
}
