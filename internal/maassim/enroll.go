package maassim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// bootstrapBundlePath is where the first-boot payload writes the node
// bootstrap bundle the node agent reads (firstboot contract).
const bootstrapBundlePath = "/etc/gpuaas/bootstrap-bundle.json"

// enrollTimeout bounds one enrollment call, in wall time.
const enrollTimeout = 30 * time.Second

// bootstrapBundle is the part of the node bootstrap bundle the node agent
// needs to enroll.
type bootstrapBundle struct {
	NodeID string `json:"GPUAAS_NODE_ID"`
	Token  string `json:"GPUAAS_ENROLLMENT_TOKEN"`
	APIURL string `json:"GPUAAS_API_URL"`
}

type cloudConfig struct {
	WriteFiles []struct {
		Path     string `yaml:"path"`
		Encoding string `yaml:"encoding"`
		Content  string `yaml:"content"`
	} `yaml:"write_files"`
}

// parseFirstBoot reads the node bootstrap bundle out of cloud-init user_data.
// Its errors never quote the payload: it holds the enrollment token.
func parseFirstBoot(userData []byte) (bootstrapBundle, error) {
	raw, err := bootstrapFile(userData)
	if err != nil {
		return bootstrapBundle{}, err
	}
	return parseBundle(raw)
}

// bootstrapFile returns the bytes cloud-init's write_files puts at
// bootstrapBundlePath, decoded as cloud-init decodes them.
func bootstrapFile(userData []byte) ([]byte, error) {
	var cc cloudConfig
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return nil, errors.New("user_data is not cloud-config YAML")
	}
	for _, f := range cc.WriteFiles {
		if f.Path != bootstrapBundlePath {
			continue
		}
		switch strings.ToLower(f.Encoding) {
		case "b64", "base64":
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(f.Content))
			if err != nil {
				return nil, fmt.Errorf("%s: content is not valid base64", bootstrapBundlePath)
			}
			return b, nil
		case "", "text/plain":
			return []byte(f.Content), nil
		default:
			return nil, fmt.Errorf("%s: unsupported encoding %q", bootstrapBundlePath, f.Encoding)
		}
	}
	return nil, fmt.Errorf("user_data writes no %s", bootstrapBundlePath)
}

// parseBundle reads what the node agent needs out of the bundle file.
func parseBundle(raw []byte) (bootstrapBundle, error) {
	var b bootstrapBundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return bootstrapBundle{}, fmt.Errorf("%s: not a JSON bootstrap bundle", bootstrapBundlePath)
	}
	var missing []string
	for _, kv := range [][2]string{{"GPUAAS_NODE_ID", b.NodeID}, {"GPUAAS_ENROLLMENT_TOKEN", b.Token}, {"GPUAAS_API_URL", b.APIURL}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return bootstrapBundle{}, fmt.Errorf("%s: missing %s", bootstrapBundlePath, strings.Join(missing, ", "))
	}
	return b, nil
}

// playNode is what the deployed OS does once it is up: cloud-init writes the
// bootstrap bundle to the node's disk, and the node agent reads it and
// enrolls. The enrollment runs off the request path so that no MAAS reply
// waits for it. Called with s.mu held.
func (s *Simulator) playNode(m *machine, at time.Time) {
	hw := m.hw
	if hw == nil || s.closed {
		return
	}
	var raw []byte
	var err error
	if len(m.userData) > 0 {
		if raw, err = bootstrapFile(m.userData); err == nil {
			hw.bootstrap = raw
		}
	}
	if hw.faults.NeverEnrolls {
		s.log.Info("node never enrolls (fault)", "maas_system_id", m.systemID, "hostname", m.hostname)
		return
	}
	if len(m.userData) == 0 {
		s.log.Info("deployed without user_data; nothing to enroll", "maas_system_id", m.systemID, "hostname", m.hostname)
		return
	}
	var b bootstrapBundle
	if err == nil {
		b, err = parseBundle(raw)
	}
	if err != nil {
		hw.enroll.Attempts++
		hw.enroll.LastError = err.Error()
		s.event(m, at, levelWarning, "Node agent enrollment failure", err.Error(), "")
		s.log.Warn("first-boot payload unreadable", "maas_system_id", m.systemID, "hostname", m.hostname, "error", err.Error())
		return
	}
	s.startAgent(m, b)
}

// enroll is the node agent's POST {GPUAAS_API_URL}/api/v1/nodes/{id}/enroll
// with its token and CSR, through hc (the agent's client, from the node's
// own address), retried as the agent retries (enrollRetry). It answers the
// credentials a 200 carried (none from an API without a node CA) and
// whether the node enrolled.
func (s *Simulator) enroll(hc *http.Client, m *machine, b bootstrapBundle, csr string) (nodeCredentials, bool) {
	target := strings.TrimRight(b.APIURL, "/") + "/api/v1/nodes/" + url.PathEscape(b.NodeID) + "/enroll"
	body, _ := json.Marshal(map[string]string{"token": b.Token, "csr": csr})
	var answer []byte
	ctx, cancel := context.WithTimeout(s.agentCtx, enrollTimeout)
	defer cancel()
	code, errCode, err := enrollRetry(ctx, func() (int, string, time.Duration, error) {
		return enrollOnce(ctx, hc, target, body, &answer)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	hw := m.hw
	current := !m.deleted && s.st.machines[m.systemID] == m
	if hw != nil && current {
		hw.enroll.Attempts++
		hw.enroll.LastCode = code
	}
	logArgs := []any{"maas_system_id", m.systemID, "hostname", m.hostname, "node_id", b.NodeID, "status", code}
	switch {
	case err == nil && code == http.StatusOK:
		if hw != nil && current {
			hw.enroll.Succeeded++
			hw.enroll.LastError = ""
			s.event(m, s.now(), levelDebug, "Node agent enrolled", "node "+b.NodeID, "")
		}
		s.log.Info("node enrolled", logArgs...)
		var creds nodeCredentials
		_ = json.Unmarshal(answer, &creds)
		return creds, current
	default:
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			msg = fmt.Sprintf("enrollment answered HTTP %d", code)
			if errCode != "" {
				msg += " (" + errCode + ")"
			}
		}
		if hw != nil && current {
			hw.enroll.LastError = msg
			s.event(m, s.now(), levelWarning, "Node agent enrollment failure", "node "+b.NodeID+": "+msg, "")
		}
		s.log.Warn("node enrollment failed", append(logArgs, "error", msg)...)
	}
	return nodeCredentials{}, false
}
