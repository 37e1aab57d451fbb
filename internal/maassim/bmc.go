package maassim

// The BMC's IPMI users. MAAS powers a machine with the power_user and
// power_pass of its power parameters; a BMC that does not know them refuses
// every request, and MAAS reports the power action failed ("Unable to power
// control the node. Please check power credentials.", as with power_fails).
// Commissioning without skip_bmc_config creates MAAS's own IPMI user on the
// BMC and stores it in the power parameters (MAAS's bmc_config commissioning
// script), so from then on the BMC accepts that one too.

// bmcUsersOf is the host's BMC users: the configured one, or nil (any).
func bmcUsersOf(h Hardware) map[string]string {
	if h.BMCUsername == "" {
		return nil
	}
	return map[string]string{h.BMCUsername: h.BMCPassword}
}

// addBMCUser adds the user commissioning created on the BMC.
func (hw *hardware) addBMCUser(user, pass string) {
	if hw.bmcUsers != nil && user != "" {
		hw.bmcUsers[user] = pass
	}
}

// bmcAccepts reports whether m's host's BMC accepts m's power credentials.
func (m *machine) bmcAccepts() bool {
	if m.hw == nil || m.hw.bmcUsers == nil {
		return true
	}
	pass, ok := m.hw.bmcUsers[m.powerParams["power_user"]]
	return ok && pass == m.powerParams["power_pass"]
}
