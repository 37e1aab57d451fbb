//go:build !unix

package maassim

// errAddrNotAvail is unknown here: an agent's own address is then used
// only where the system routes it.
var errAddrNotAvail error
