package api

import "net/http"

// routeTable is every endpoint. openapi.yaml describes exactly these
// (TestOpenAPIMatchesRoutes).
func routeTable() []route {
	const (
		sites    = "/api/v1/admin/maas-sites"
		site     = sites + "/{id}"
		profiles = site + "/profiles"
		profile  = profiles + "/{profile_id}"
		roce     = site + "/roce-assignments"
		dsgn     = site + "/design"
		skus     = "/api/v1/admin/skus"
		obs      = "/api/v1/admin/onboardings"
		recon    = "/api/v1/admin/reconciliation"
		nodes    = "/api/v1/admin/nodes"
		node     = nodes + "/{id}"
		decoms   = "/api/v1/admin/decommissions"
	)
	return append([]route{
		{method: http.MethodGet, pattern: "/api/v1/healthz", access: accessPublic, handle: (*server).healthz},

		{method: http.MethodPost, pattern: sites, action: "site.create", target: "site", handle: (*server).createSite},
		{method: http.MethodGet, pattern: sites, handle: (*server).listSites},
		{method: http.MethodGet, pattern: site, handle: (*server).getSite},
		{method: http.MethodPatch, pattern: site, action: "site.update", target: "site:{id}", handle: (*server).patchSite},
		{method: http.MethodDelete, pattern: site, action: "site.disable", target: "site:{id}", handle: (*server).disableSite},
		{method: http.MethodPost, pattern: site + "/credentials", action: "site.credentials.write", target: "site:{id}", handle: (*server).putCredentials},
		{method: http.MethodPost, pattern: site + "/power-overrides", action: "site.power_override.write", target: "site:{id}", handle: (*server).putPowerOverride},
		{method: http.MethodPost, pattern: site + "/probe", action: "site.probe", target: "site:{id}", noBody: true, handle: (*server).probeSite},
		{method: http.MethodPost, pattern: site + "/connector/certificate", action: "site.connector.certificate", target: "site:{id}", handle: (*server).issueConnectorCertificate},

		{method: http.MethodPost, pattern: profiles, action: "profile.create", target: "site:{id}/profile", handle: (*server).createProfile},
		{method: http.MethodGet, pattern: profiles, handle: (*server).listProfiles},
		{method: http.MethodGet, pattern: profile, handle: (*server).getProfile},
		{method: http.MethodPatch, pattern: profile, action: "profile.update", target: "site:{id}/profile:{profile_id}", handle: (*server).patchProfile},
		{method: http.MethodDelete, pattern: profile, action: "profile.disable", target: "site:{id}/profile:{profile_id}", handle: (*server).disableProfile},

		{method: http.MethodPost, pattern: roce, action: "roce.upsert", target: "site:{id}/roce-assignments", handle: (*server).upsertRoCE},
		{method: http.MethodGet, pattern: roce, handle: (*server).listRoCE},
		{method: http.MethodDelete, pattern: roce + "/{assignment_id}", action: "roce.delete", target: "site:{id}/roce-assignment:{assignment_id}", handle: (*server).deleteRoCE},

		{method: http.MethodPost, pattern: dsgn + "/plan", action: "design.plan", target: "site:{id}/design", handle: (*server).dryRunDesign},
		{method: http.MethodPost, pattern: dsgn + "/apply", action: "design.apply", target: "site:{id}/design", handle: (*server).applyDesign},
		{method: http.MethodGet, pattern: dsgn, handle: (*server).getDesign},
		{method: http.MethodGet, pattern: dsgn + "/nodes/{hostname}", handle: (*server).getDesignNode},

		{method: http.MethodPost, pattern: skus, action: "sku.create", target: "sku", handle: (*server).createSKU},
		{method: http.MethodGet, pattern: skus, handle: (*server).listSKUs},
		{method: http.MethodGet, pattern: skus + "/{id}", handle: (*server).getSKU},
		{method: http.MethodPatch, pattern: skus + "/{id}", action: "sku.update", target: "sku:{id}", handle: (*server).patchSKU},
		{method: http.MethodPost, pattern: skus + "/{id}/approve", action: "sku.approve", target: "sku:{id}", handle: (*server).approveSKU},
		{method: http.MethodPost, pattern: skus + "/{id}/reject", action: "sku.reject", target: "sku:{id}", handle: (*server).rejectSKU},
		{method: http.MethodGet, pattern: skus + "/{id}/nodes", handle: (*server).listSKUNodes},

		{method: http.MethodPost, pattern: obs, action: "onboarding.create", target: "onboarding", handle: (*server).createOnboarding},
		{method: http.MethodGet, pattern: obs, handle: (*server).listOnboardings},
		{method: http.MethodGet, pattern: obs + "/{id}", handle: (*server).getOnboarding},
		{method: http.MethodPost, pattern: obs + "/{id}/cancel", action: "onboarding.cancel", target: "onboarding:{id}", handle: (*server).cancelOnboarding},
		{method: http.MethodPost, pattern: obs + "/batch", action: "onboarding.batch.create", target: "batch", handle: (*server).createBatch},
		{method: http.MethodGet, pattern: "/api/v1/admin/onboarding-batches", handle: (*server).listBatches},
		{method: http.MethodGet, pattern: "/api/v1/admin/onboarding-batches/{id}", handle: (*server).getBatch},

		{method: http.MethodPost, pattern: recon + "/run", action: "reconciliation.run", target: "reconciliation", handle: (*server).runReconcile},
		{method: http.MethodGet, pattern: recon + "/status", handle: (*server).reconcileStatus},
		{method: http.MethodGet, pattern: recon + "/drift", handle: (*server).listDrift},
		{method: http.MethodPost, pattern: recon + "/drift/{node_id}/resolve", action: "reconciliation.drift.resolve", target: "node:{node_id}", handle: (*server).resolveDrift},

		{method: http.MethodGet, pattern: nodes, handle: (*server).listNodes},
		{method: http.MethodGet, pattern: node, handle: (*server).getNode},
		{method: http.MethodPost, pattern: node + "/retire", action: "node.retire", target: "node:{id}", handle: (*server).retireNode},
		{method: http.MethodPost, pattern: node + "/reactivate", action: "node.reactivate", target: "node:{id}", handle: (*server).reactivateNode},
		{method: http.MethodPost, pattern: node + "/remove", action: "node.remove", target: "node:{id}", handle: (*server).removeNode},
		{method: http.MethodPost, pattern: node + "/bootstrap-bundle", action: "node.bootstrap_bundle.reissue", target: "node:{id}", handle: (*server).reissueBundle},
		{method: http.MethodPost, pattern: node + "/decommission", action: "node.decommission", target: "node:{id}", handle: (*server).decommissionNode},
		{method: http.MethodPost, pattern: node + "/storage-cleanup", action: "node.storage_cleanup", target: "node:{id}", handle: (*server).storageCleanup},
		{method: http.MethodGet, pattern: decoms, handle: (*server).listDecommissions},
		{method: http.MethodGet, pattern: decoms + "/{id}", handle: (*server).getDecommission},

		{method: http.MethodGet, pattern: "/api/v1/admin/audit", handle: (*server).listAudit},

		{method: http.MethodGet, pattern: "/api/v1/nodes/{id}/design", access: accessNode, handle: (*server).nodeDesign},

		{method: http.MethodGet, pattern: obs + "/stream", handle: streamOf("onboardings", (*server).listOnboardings)},
		{method: http.MethodGet, pattern: obs + "/{id}/stream", handle: streamOf("onboarding", (*server).getOnboarding)},
		{method: http.MethodGet, pattern: decoms + "/{id}/stream", handle: streamOf("decommission", (*server).getDecommission)},
		{method: http.MethodGet, pattern: "/api/v1/admin/onboarding-batches/{id}/stream", handle: streamOf("batch", (*server).getBatch)},
		{method: http.MethodGet, pattern: decoms + "/stream", handle: streamOf("decommissions", (*server).listDecommissions)},
		{method: http.MethodGet, pattern: "/api/v1/admin/onboarding-batches/stream", handle: streamOf("batches", (*server).listBatches)},
		{method: http.MethodGet, pattern: nodes + "/stream", handle: streamOf("nodes", (*server).listNodes)},
		{method: http.MethodGet, pattern: node + "/stream", handle: streamOf("node", (*server).getNode)},
		{method: http.MethodGet, pattern: recon + "/drift/stream", handle: streamOf("drift", (*server).listDrift)},
		{method: http.MethodGet, pattern: sites + "/stream", handle: streamOf("sites", (*server).listSites)},

		{method: http.MethodPost, pattern: "/api/v1/nodes/{id}/enroll", access: accessNode, action: "node.enroll", target: "node:{id}", handle: (*server).enroll},
		{method: http.MethodPost, pattern: "/api/v1/nodes/{id}/recover", access: accessNode, action: "node.certificate.recover", target: "node:{id}", handle: (*server).recoverCertificate},
		{method: http.MethodGet, pattern: "/node/v1/nodes/{id}/tasks/wait", access: accessNode, handle: (*server).waitTasks},
		{method: http.MethodPost, pattern: "/node/v1/nodes/{id}/tasks/{task_id}/result", access: accessNode, action: "node.task.result", target: "node:{id}/task:{task_id}", handle: (*server).postResult},
		{method: http.MethodPost, pattern: "/node/v1/nodes/{id}/certificate", access: accessNode, action: "node.certificate.renew", target: "node:{id}", handle: (*server).renewCertificate},
		{method: http.MethodPost, pattern: "/api/v1/connectors/{id}/certificate", access: accessConnector, action: "site.connector.certificate.renew", target: "site:{id}", handle: (*server).renewConnectorCertificate},
	}, append(recoveryRoutes(obs), decommissionRecoveryRoutes(decoms)...)...)
}

func (s *server) healthz(*request) (int, any, error) {
	return http.StatusOK, map[string]string{"status": "ok"}, nil
}

// list is the wire form of every listing.
type list[T any] struct {
	Items []T `json:"items"`
}

func newList[T any](items []T) list[T] {
	if items == nil {
		items = []T{}
	}
	return list[T]{Items: items}
}
