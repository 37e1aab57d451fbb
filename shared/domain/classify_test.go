package domain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Realistic MAAS texts (maas-behaviour §11, §12, §14): event types and
// descriptions as MAAS records them, and curtin's install log.
const (
	installLogOK = `start: cmd-install/stage-partitioning/builtin/cmd-block-meta: curtin command block-meta
finish: cmd-install/stage-partitioning/builtin/cmd-block-meta: SUCCESS: configuring disk: sda
finish: cmd-install/stage-curthooks/builtin/cmd-curthooks: SUCCESS: curtin command curthooks
finish: cmd-install: SUCCESS: curtin command install
`
	installLogCurtinFail = `start: cmd-install/stage-partitioning/builtin/cmd-block-meta: curtin command block-meta
An error occured handling 'sda': ProcessExecutionError - Unexpected error while running command.
finish: cmd-install/stage-partitioning/builtin/cmd-block-meta: FAIL: configuring disk: sda
Installation failed with exception: Unexpected error while running command.
`
)

func TestClassifyDeployFailure(t *testing.T) {
	ev := func(typ, level, desc string) DeployEvent {
		return DeployEvent{Type: typ, Level: level, Description: desc}
	}
	cloudinitFetch := ev("Node post-installation failure", "ERROR",
		"'cloudinit' Failed to fetch metadata from http://10.20.0.2:5248/MAAS/metadata/: connection timed out")
	tests := []struct {
		name       string
		in         DeployFailureEvidence
		want       string
		wantReason string
	}{
		{
			name: "cloudinit post-installation failure while deploying",
			in: DeployFailureEvidence{StatusName: "Deploying", InstallationOutput: installLogOK, Events: []DeployEvent{
				cloudinitFetch, ev("Rebooting", "INFO", ""), ev("Installing OS", "INFO", ""),
			}},
			want: DeployFailureDatasource, wantReason: "'cloudinit'",
		},
		{
			name: "MAAS 3.5 deploy timeout after the OS never fetched user-data",
			in: DeployFailureEvidence{StatusName: "Failed deployment", InstallationOutput: installLogOK, Events: []DeployEvent{
				ev("Marking node failed", "ERROR", "Node operation 'Deploying' timed out after 30 minutes."),
			}},
			want: DeployFailureDatasource, wantReason: "timed out",
		},
		{
			name: "MAAS 3.6 temporal deploy timeout",
			in: DeployFailureEvidence{StatusName: "Failed deployment", Events: []DeployEvent{
				ev("Marking node failed", "ERROR", "time-out during deployment"),
			}},
			want: DeployFailureDatasource,
		},
		{
			name: "url_helper warning from the deployed OS",
			in: DeployFailureEvidence{StatusName: "Deploying", Events: []DeployEvent{
				ev("Node post-installation failure", "WARNING",
					"url_helper.py[WARNING]: Calling 'http://10.20.0.2:5248/MAAS/metadata/2012-03-01/meta-data/instance-id' failed [120/120s]"),
			}},
			want: DeployFailureDatasource,
		},
		{
			name: "datasource none",
			in: DeployFailureEvidence{StatusName: "Deploying", Events: []DeployEvent{
				ev("Node status event", "ERROR", "cloud-init: Datasource DataSourceNone. No active metadata service found"),
			}},
			want: DeployFailureDatasource,
		},
		{
			name: "curtin installation failure event",
			in: DeployFailureEvidence{StatusName: "Failed deployment", InstallationOutput: installLogCurtinFail, Events: []DeployEvent{
				ev("Node installation failure", "ERROR", "'curtin' curtin command install"),
				ev("Marking node failed", "ERROR", "Installation failed (refer to the installation log for more information)."),
			}},
			want: DeployFailureOther, wantReason: "curtin",
		},
		{
			name: "curtin wins over a later timeout",
			in: DeployFailureEvidence{StatusName: "Failed deployment", Events: []DeployEvent{
				ev("Marking node failed", "ERROR", "Node operation 'Deploying' timed out after 30 minutes."),
				ev("Node installation failure", "ERROR", "'curtin' curtin command install"),
			}},
			want: DeployFailureOther, wantReason: "curtin",
		},
		{
			name: "curtin failure visible only in the installation output",
			in: DeployFailureEvidence{StatusName: "Failed deployment", InstallationOutput: installLogCurtinFail, Events: []DeployEvent{
				ev("Marking node failed", "ERROR", "Node operation 'Deploying' timed out after 30 minutes."),
			}},
			want: DeployFailureOther, wantReason: "installation output",
		},
		{
			name: "BMC failure reverts the deploy",
			in: DeployFailureEvidence{StatusName: "Allocated", Events: []DeployEvent{
				ev("Failed to query node's BMC", "ERROR",
					"Aborting DEPLOYING and reverting to ALLOCATED. Unable to power control the node. Please check power credentials."),
			}},
			want: DeployFailureOther, wantReason: "BMC",
		},
		{
			name: "power on failure",
			in: DeployFailureEvidence{StatusName: "Failed deployment", Events: []DeployEvent{
				ev("Failed to power on node", "ERROR", "Power on for the node failed: ipmipower: connection timeout"),
			}},
			want: DeployFailureOther, wantReason: "BMC",
		},
		{
			name: "status alone is not evidence",
			in:   DeployFailureEvidence{StatusName: "Failed deployment"},
			want: DeployFailureOther, wantReason: "no datasource",
		},
		{
			name: "INFO cloud-init progress is not evidence",
			in: DeployFailureEvidence{StatusName: "Failed deployment", Events: []DeployEvent{
				ev("Node status event", "INFO", "'cloudinit' running modules for final"),
				ev("Configuring OS", "INFO", ""),
			}},
			want: DeployFailureOther,
		},
		{
			name: "DEBUG user request mentioning metadata is not evidence",
			in: DeployFailureEvidence{Events: []DeployEvent{
				ev("User starting deployment", "DEBUG", "(admin) - metadata url failed earlier"),
			}},
			want: DeployFailureOther,
		},
		{
			name: "unrelated error is other",
			in: DeployFailureEvidence{StatusName: "Failed deployment", Events: []DeployEvent{
				ev("Marking node failed", "ERROR", "Failed to render preseed: unknown kernel"),
			}},
			want: DeployFailureOther, wantReason: "no datasource",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ClassifyDeployFailure(tc.in)
			assert.Equal(t, tc.want, got.Class)
			assert.NotEmpty(t, got.Reason)
			if tc.wantReason != "" {
				assert.Contains(t, got.Reason, tc.wantReason)
			}
			assert.LessOrEqual(t, len(got.Reason), maxReasonLen+len("installation output: ")+len("…")+64)
		})
	}
}

func TestIsDatasourceFailureEvent(t *testing.T) {
	tests := []struct {
		ev   DeployEvent
		want bool
	}{
		{DeployEvent{Type: "Node post-installation failure", Level: "ERROR", Description: "'cloudinit' metadata unreachable"}, true},
		{DeployEvent{Type: "Marking node failed", Level: "ERROR", Description: "Node operation 'Deploying' timed out after 30 minutes."}, true},
		{DeployEvent{Type: "Node installation failure", Level: "ERROR", Description: "'curtin' curtin command install"}, false},
		{DeployEvent{Type: "Deploying", Level: "INFO"}, false},
		{DeployEvent{Type: "Node status event", Level: "INFO", Description: "'cloudinit' running modules for final"}, false},
		{DeployEvent{Type: "Failed to query node's BMC", Level: "WARNING", Description: "Unable to power control the node"}, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, IsDatasourceFailureEvent(tc.ev), tc.ev.Type+" "+tc.ev.Description)
	}
}

func TestClassifyReasonIsBounded(t *testing.T) {
	long := DeployEvent{Type: "Node post-installation failure", Level: "ERROR", Description: "'cloudinit' " + strings.Repeat("é", 400)}
	got := ClassifyDeployFailure(DeployFailureEvidence{Events: []DeployEvent{long}})
	assert.Equal(t, DeployFailureDatasource, got.Class)
	assert.LessOrEqual(t, len(got.Reason), len("datasource unreachable: ")+maxReasonLen+len("…"))
	assert.True(t, strings.HasSuffix(got.Reason, "…"))
}
