package maassim

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The node agent after enrollment, as the onboarding runbook describes it:
// the agent makes its key on the node (only a CSR leaves), reads its own
// design through the Introspection API with its enrollment token, enrolls
// with the token and the CSR, keeps the certificate and the recovery token
// on the node's disk, heartbeats over mutual TLS on the node endpoints,
// renews at two thirds of the certificate's life (on the simulator's
// clock, so the time scale applies), recovers an expired certificate with
// its recovery token, and stops when its identity is refused for good.
// Every refusal's code lands in the host's enrollment state (agent), never
// a credential.

// Refusal codes the node endpoints answer (docs/api.md "Node endpoints");
// the agent acts on these, and records every code it gets.
const (
	codeCertExpired      = "node_cert_expired"
	codeNodeRetired      = "node_retired"
	codeNodeRemoved      = "node_removed"
	codeRecoveryRejected = "recovery_token_rejected"
)

// agentPollSeconds is the heartbeat's longest long poll (wall time, as the
// node endpoint waits): a real agent's default.
const agentPollSeconds = 20

// renewFraction is how far into its life a certificate is renewed.
const renewFraction = 2.0 / 3.0

// maxAgentRefusals bounds the codes kept in AgentState.Refusals; the list
// is only appended to, so a view copied out under the lock stays valid.
const maxAgentRefusals = 32

// AgentState is what the node agent did after enrollment (the host's
// enrollment view, "agent", and NodeAgent). It holds codes and counts,
// never a credential.
type AgentState struct {
	// DesignStatus is the HTTP status of the first-boot read of the node's
	// own design (GET /api/v1/nodes/{id}/design); DesignHostname the
	// host name the design it read names.
	DesignStatus   int    `json:"design_status,omitempty"`
	DesignHostname string `json:"design_hostname,omitempty"`
	// DesignCertStatus is the status of the same read once enrolled, on
	// the node listener with the node's certificate.
	DesignCertStatus int `json:"design_cert_status,omitempty"`
	// CertSerial and CertNotAfter describe the certificate in use.
	CertSerial   string     `json:"cert_serial,omitempty"`
	CertNotAfter *time.Time `json:"cert_not_after,omitempty"`
	Heartbeats   int        `json:"heartbeats"`
	Renewals     int        `json:"renewals"`
	Recoveries   int        `json:"recoveries"`
	// Refusals are the error codes the agent was answered, in order.
	Refusals []string `json:"refusals,omitempty"`
	// Stopped says why the agent stopped ("" while it runs).
	Stopped string `json:"stopped,omitempty"`
}

// NodeFiles are the identity files the node agent keeps on the node's disk
// (the bootstrap bundle's cert_path, key_path and recovery_token_path):
// what root on the node could read, as NodeBootstrap is. They are only
// read through the Go API, for tests that check no copy leaves the node.
type NodeFiles struct {
	KeyPEM        string
	CertPEM       string
	RecoveryToken string
}

// agentRun is one boot's node agent of a host (hardware.agent): a new
// deployment starts another, and the earlier one stops when it sees it is
// no longer its host's.
type agentRun struct {
	files NodeFiles // guarded by the simulator's mu
}

// nodeCredentials is what enrollment, renewal and recovery answer.
type nodeCredentials struct {
	CertificatePEM string    `json:"certificate_pem"`
	CAPEM          string    `json:"ca_pem"`
	NotAfter       time.Time `json:"certificate_not_after"`
	RecoveryToken  string    `json:"recovery_token"`
	NodeAPIURL     string    `json:"node_api_url"`
}

// nodeAgent is the running agent's working state; only its goroutine uses it.
type nodeAgent struct {
	s      *Simulator
	m      *machine
	run    *agentRun
	b      bootstrapBundle
	key    *ecdsa.PrivateKey
	creds  nodeCredentials
	issued time.Time // on the simulator's clock
	// api calls the API (enrollment, design, recovery) from the node's
	// address addr; tr and hc call the node endpoints over mutual TLS.
	addr net.IP
	api  *http.Client
	tr   *http.Transport
	hc   *http.Client
	// bornWall and bornSim are when the agent got its first certificate,
	// on the wall clock and the simulator's: their ratio is the time scale.
	bornWall, bornSim time.Time
}

// NodeFiles returns the identity files the node agent of hostname keeps.
func (s *Simulator) NodeFiles(hostname string) (NodeFiles, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hw, err := s.hostNamed(hostname)
	if err != nil {
		return NodeFiles{}, err
	}
	if hw.agent == nil {
		return NodeFiles{}, &SimulatorNotFoundError{Hostname: hostname, Reason: "no node agent ran on it"}
	}
	return hw.agent.files, nil
}

// StopAgents stops every node agent and waits for them to end, as when
// every node loses its network: a heartbeat's long poll no longer holds a
// server that is shutting down. Nodes deployed later start no agent.
func (s *Simulator) StopAgents() {
	s.mu.Lock()
	s.stopAgent()
	s.mu.Unlock()
	s.enrollWG.Wait()
}

// NodeUserData returns the user_data the OS deployed on hostname's host
// fetched at first boot (the whole cloud-config, enrollment token
// included), while its machine is Deployed: what a test runs as cloud-init
// would, for a host whose simulated agent does nothing (never_enrolls).
func (s *Simulator) NodeUserData(hostname string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.now())
	hw, err := s.hostNamed(hostname)
	if err != nil {
		return nil, err
	}
	for _, m := range s.st.machines {
		if m.hw == hw && !m.deleted && m.status == statusDeployed && len(m.userData) > 0 {
			return bytes.Clone(m.userData), nil
		}
	}
	return nil, &SimulatorNotFoundError{Hostname: hostname, Reason: "no deployed machine with user_data"}
}

// NodeAgent returns what the node agent of hostname did so far.
func (s *Simulator) NodeAgent(hostname string) (AgentState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hw, err := s.hostNamed(hostname)
	if err != nil {
		return AgentState{}, err
	}
	st := hw.enroll.Agent
	st.Refusals = slices.Clone(st.Refusals)
	return st, nil
}

// startAgent starts the node agent of m's new boot. Called with s.mu held.
func (s *Simulator) startAgent(m *machine, b bootstrapBundle) {
	if s.agentCtx.Err() != nil {
		return
	}
	run := &agentRun{}
	m.hw.agent = run
	m.hw.enroll.Agent = AgentState{}
	s.enrollWG.Add(1)
	go func() {
		defer s.enrollWG.Done()
		a := &nodeAgent{s: s, m: m, run: run, b: b}
		a.firstBoot()
	}()
}

// firstBoot is the agent from its first start: key, design, enrollment,
// then heartbeats until it stops.
func (a *nodeAgent) firstBoot() {
	a.addr = agentAddr(a.s.agents.Add(1))
	a.api = a.s.httpClient
	if a.s.ownClient {
		a.api = &http.Client{Timeout: a.s.httpClient.Timeout, Transport: a.s.agentTransport(a.b.APIURL, a.addr)}
	}
	defer func() {
		a.api.CloseIdleConnections()
		if a.tr != nil {
			a.tr.CloseIdleConnections()
		}
	}()
	k, err := a.newKey()
	if err != nil {
		a.stop("key generation failed")
		return
	}
	a.readDesign()
	creds, ok := a.s.enroll(a.api, a.m, a.b, k.csr)
	if !ok || creds.CertificatePEM == "" {
		// Refused (recorded by enroll), or an API that issues no node
		// certificates: enrollment is all the agent does.
		return
	}
	if err := a.keep(creds, k); err != nil {
		a.stop(err.Error())
		return
	}
	a.readDesignWithCert()
	// Done with the API's listener until a recovery: a node does not keep
	// an idle connection to it while it heartbeats elsewhere (a thousand
	// agents' idle connections would fill the API's connection limit and
	// refuse the next nodes' enrollments).
	a.api.CloseIdleConnections()
	if a.takeFault(func(f *Faults) *bool { return &f.ExpiredCert }) {
		// The node stayed down past its certificate's life: at the next
		// start the certificate it finds is expired.
		if !a.sleepUntil(creds.NotAfter.Add(time.Minute)) {
			return
		}
	}
	a.loop()
}

// nodeKey is a key the node made and the CSR over it.
type nodeKey struct {
	key    *ecdsa.PrivateKey
	keyPEM string
	csr    string
}

// newKey makes a node key (it never leaves the node) and its CSR.
func (a *nodeAgent) newKey() (nodeKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nodeKey{}, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: a.b.NodeID}}, key)
	if err != nil {
		return nodeKey{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nodeKey{}, err
	}
	return nodeKey{key: key, keyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
		csr: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))}, nil
}

// keep stores new credentials on the node's disk and makes the mutual TLS
// client present the new certificate from the next connection on.
func (a *nodeAgent) keep(creds nodeCredentials, k nodeKey) error {
	block, _ := pem.Decode([]byte(creds.CertificatePEM))
	if block == nil {
		return errors.New("the certificate answered is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return errors.New("the certificate answered does not parse")
	}
	if a.tr == nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(creds.CAPEM)) {
			return errors.New("the node CA answered does not parse")
		}
		a.tr = a.s.agentTransport(creds.NodeAPIURL, a.addr)
		a.tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				a.s.mu.Lock()
				defer a.s.mu.Unlock()
				return a.tlsCert(), nil
			}}
		a.hc = &http.Client{Timeout: (agentPollSeconds + 10) * time.Second, Transport: a.tr}
	}
	now := a.s.clock.Now()
	if a.bornWall.IsZero() {
		a.bornWall, a.bornSim = time.Now(), now
	}
	a.s.mu.Lock()
	a.creds, a.issued, a.key = creds, now, k.key
	a.run.files = NodeFiles{KeyPEM: k.keyPEM, CertPEM: creds.CertificatePEM, RecoveryToken: creds.RecoveryToken}
	na := cert.NotAfter
	a.state(func(st *AgentState) { st.CertSerial, st.CertNotAfter = cert.SerialNumber.Text(16), &na })
	a.s.mu.Unlock()
	// Connections made with the previous certificate would keep showing it.
	a.tr.CloseIdleConnections()
	return nil
}

// tlsCert is the certificate and key the agent presents. Called with s.mu held.
func (a *nodeAgent) tlsCert() *tls.Certificate {
	block, _ := pem.Decode([]byte(a.creds.CertificatePEM))
	if block == nil {
		return &tls.Certificate{}
	}
	return &tls.Certificate{Certificate: [][]byte{block.Bytes}, PrivateKey: a.key}
}

// loop heartbeats until the agent stops, renewing on time and recovering
// an expired certificate.
func (a *nodeAgent) loop() {
	backoff := enrollBackoffMin
	retired := false
	for a.alive() {
		renewAt := a.issued.Add(time.Duration(float64(a.creds.NotAfter.Sub(a.issued)) * renewFraction))
		if !a.s.clock.Now().Before(renewAt) {
			if !a.renew() {
				return
			}
			// A reactivated node gets work again: ask once per certificate.
			retired = false
			continue
		}
		if retired {
			// A retired node gets no runtime work; it only keeps its identity.
			if !a.sleepUntil(renewAt) {
				return
			}
			continue
		}
		ctx, cancel := context.WithCancel(a.s.agentCtx)
		t := a.s.clock.AfterFunc(a.s.clock.Until(renewAt), cancel)
		status, code, _, err := a.call(ctx, http.MethodGet, a.creds.NodeAPIURL, "/node/v1/nodes/"+url.PathEscape(a.b.NodeID)+fmt.Sprintf("/tasks/wait?wait_seconds=%d", a.pollSeconds(renewAt)), nil)
		t.Stop()
		renewDue := ctx.Err() != nil
		cancel()
		switch {
		case renewDue || a.s.agentCtx.Err() != nil:
			// Renewal is due (or the simulator stops): the loop decides.
		case err == nil && status == http.StatusOK:
			backoff = enrollBackoffMin
			a.update(func(st *AgentState) { st.Heartbeats++ })
		case code == codeCertExpired:
			a.refused(code)
			if !a.recover() {
				return
			}
		case code == codeNodeRetired:
			a.refused(code)
			retired = true
		case err == nil && status >= 400 && status < 500:
			a.refused(code)
			a.stop("heartbeat refused: " + code)
			return
		default:
			// Overloaded or unreachable: try again later, as on enrollment.
			if !a.wallSleep(backoff) {
				return
			}
			backoff = min(2*backoff, enrollBackoffMax)
		}
	}
}

// pollSeconds is the heartbeat's long poll: 20 seconds, or less when the
// renewal is due sooner, so that on a sped-up clock heartbeats still get
// answered between renewals. The node endpoint waits wall time; the
// renewal is due on the simulator's clock, whose speed is measured over
// the agent's life (at least a second of it; one second until then).
func (a *nodeAgent) pollSeconds(renewAt time.Time) int {
	wall := time.Since(a.bornWall)
	if wall < time.Second {
		return 1
	}
	scale := max(float64(a.s.clock.Since(a.bornSim))/float64(wall), 1)
	left := time.Duration(float64(a.s.clock.Until(renewAt)) / scale)
	return int(min(max(left/2/time.Second, 1), agentPollSeconds))
}

// renew asks for a certificate over a new key with the current
// certificate; false when the agent stopped.
func (a *nodeAgent) renew() bool {
	k, err := a.newKey()
	if err != nil {
		a.stop("key generation failed")
		return false
	}
	status, code, raw, err := a.call(a.s.agentCtx, http.MethodPost, a.creds.NodeAPIURL,
		"/node/v1/nodes/"+url.PathEscape(a.b.NodeID)+"/certificate", map[string]string{"csr": k.csr})
	switch {
	case err == nil && status == http.StatusOK:
		return a.took(raw, k, func(st *AgentState) { st.Renewals++ })
	case code == codeCertExpired:
		a.refused(code)
		return a.recover()
	case err == nil && status >= 400 && status < 500:
		a.refused(code)
		a.stop("renewal refused: " + code)
		return false
	}
	// Not renewed: the node keeps the key its certificate is for.
	return a.wallSleep(enrollBackoffMax)
}

// recover trades the recovery token and a CSR for a new certificate and a
// new recovery token; false when the agent stopped.
func (a *nodeAgent) recover() bool {
	spent := a.creds.RecoveryToken
	k, err := a.newKey()
	if err != nil {
		a.stop("key generation failed")
		return false
	}
	target := strings.TrimRight(a.b.APIURL, "/")
	path := "/api/v1/nodes/" + url.PathEscape(a.b.NodeID) + "/recover"
	for a.alive() {
		status, code, raw, err := a.call(a.s.agentCtx, http.MethodPost, target, path, map[string]string{"recovery_token": spent, "csr": k.csr})
		switch {
		case err == nil && status == http.StatusOK:
			if !a.took(raw, k, func(st *AgentState) { st.Recoveries++ }) {
				return false
			}
			if a.takeFault(func(f *Faults) *bool { return &f.ReplaysRecoveryToken }) {
				// A copy of the node's disk from before the recovery tries
				// the spent token again: it must be refused.
				_, code, _, _ := a.call(a.s.agentCtx, http.MethodPost, target, path, map[string]string{"recovery_token": spent, "csr": k.csr})
				a.refused(code)
			}
			return true
		case err == nil && status >= 400 && status < 500:
			a.refused(code)
			a.stop("recovery refused: " + code)
			return false
		}
		if !a.wallSleep(enrollBackoffMax) {
			return false
		}
	}
	return false
}

// took keeps the credentials of a renewal or recovery answer.
func (a *nodeAgent) took(raw []byte, k nodeKey, count func(*AgentState)) bool {
	var creds nodeCredentials
	if err := json.Unmarshal(raw, &creds); err != nil || creds.CertificatePEM == "" {
		a.stop("the answer carried no certificate")
		return false
	}
	if creds.CAPEM == "" {
		creds.CAPEM = a.creds.CAPEM
	}
	if creds.NodeAPIURL == "" {
		creds.NodeAPIURL = a.creds.NodeAPIURL
	}
	if err := a.keep(creds, k); err != nil {
		a.stop(err.Error())
		return false
	}
	a.update(count)
	return true
}

// readDesign is the first-boot read of the node's own effective design,
// with the enrollment token (still unspent: the node enrolls next).
func (a *nodeAgent) readDesign() {
	target := strings.TrimRight(a.b.APIURL, "/") + "/api/v1/nodes/" + url.PathEscape(a.b.NodeID) + "/design"
	ctx, cancel := context.WithTimeout(a.s.agentCtx, enrollTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+a.b.Token)
	resp, err := a.api.Do(req)
	if err != nil {
		a.update(func(st *AgentState) { st.Refusals = appendRefusal(st.Refusals, "design_unreachable") })
		return
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var d struct {
		Hostname string `json:"hostname"`
	}
	_ = json.Unmarshal(raw, &d)
	a.update(func(st *AgentState) { st.DesignStatus, st.DesignHostname = resp.StatusCode, d.Hostname })
}

// readDesignWithCert reads the node's design again once enrolled, with
// its identity: on the node listener, over mutual TLS.
func (a *nodeAgent) readDesignWithCert() {
	status, _, _, err := a.call(a.s.agentCtx, http.MethodGet, a.creds.NodeAPIURL,
		"/api/v1/nodes/"+url.PathEscape(a.b.NodeID)+"/design", nil)
	if err == nil {
		a.update(func(st *AgentState) { st.DesignCertStatus = status })
	}
}

// call makes one JSON call and returns the status, the error code and the body.
func (a *nodeAgent) call(ctx context.Context, method, base, path string, body any) (int, string, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, rd)
	if err != nil {
		return 0, "", nil, errors.New("node endpoint URL is invalid")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := a.api
	if base == a.creds.NodeAPIURL && a.hc != nil {
		hc = a.hc
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, errors.New("node endpoint call failed")
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	code := errorCode(raw)
	if code == "" && resp.StatusCode >= 400 {
		code = fmt.Sprintf("http_%d", resp.StatusCode)
	}
	return resp.StatusCode, code, raw, nil
}

// alive tells whether the agent still runs: the simulator is open and the
// machine is still this boot's, deployed.
func (a *nodeAgent) alive() bool {
	if a.s.agentCtx.Err() != nil {
		return false
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	m := a.m
	return !a.s.closed && !m.deleted && a.s.st.machines[m.systemID] == m && m.status == statusDeployed &&
		m.hw != nil && m.hw.agent == a.run && m.hw.enroll.Agent.Stopped == ""
}

// sleepUntil waits on the simulator's clock; false when the agent stopped.
func (a *nodeAgent) sleepUntil(t time.Time) bool {
	d := a.s.clock.Until(t)
	if d > 0 {
		timer := a.s.clock.NewTimer(d)
		defer timer.Stop()
		select {
		case <-a.s.agentCtx.Done():
			return false
		case <-timer.Chan():
		}
	}
	return a.alive()
}

// wallSleep waits d of wall time (a retry's backoff); false when the agent stopped.
func (a *nodeAgent) wallSleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.s.agentCtx.Done():
		return false
	case <-t.C:
	}
	return a.alive()
}

// takeFault consumes a one-shot fault of the host.
func (a *nodeAgent) takeFault(field func(*Faults) *bool) bool {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	if a.m.hw == nil {
		return false
	}
	f := field(&a.m.hw.faults)
	on := *f
	*f = false
	return on
}

// update changes the host's agent state if this agent is still its host's.
func (a *nodeAgent) update(f func(*AgentState)) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.state(f)
}

// state is update with s.mu held.
func (a *nodeAgent) state(f func(*AgentState)) {
	if hw := a.m.hw; hw != nil && hw.agent == a.run {
		f(&hw.enroll.Agent)
	}
}

// refused records a refusal's code, as a simulator event and a log line.
func (a *nodeAgent) refused(code string) {
	if code == "" {
		code = "unanswered"
	}
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.state(func(st *AgentState) { st.Refusals = appendRefusal(st.Refusals, code) })
	a.s.event(a.m, a.s.now(), levelWarning, "Node agent refused", "node "+a.b.NodeID+": "+code, "")
	a.s.log.Warn("node agent refused", "maas_system_id", a.m.systemID, "hostname", a.m.hostname, "node_id", a.b.NodeID, "code", code)
}

// stop ends the agent, saying why.
func (a *nodeAgent) stop(why string) {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.state(func(st *AgentState) { st.Stopped = why })
	a.s.log.Info("node agent stopped", "maas_system_id", a.m.systemID, "hostname", a.m.hostname, "node_id", a.b.NodeID, "why", why)
}

func appendRefusal(list []string, code string) []string {
	if len(list) >= maxAgentRefusals {
		return list
	}
	return append(list, code)
}
