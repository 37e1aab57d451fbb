//go:build unix

package maassim

import "syscall"

// errAddrNotAvail is what binding a source address the system does not
// route answers.
var errAddrNotAvail error = syscall.EADDRNOTAVAIL
