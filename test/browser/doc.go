// Package browser drives the operator console in a real headless Chromium
// (Debian's chromium package) against the local stack and its MAAS
// simulator, and checks what is on screen.
package browser
