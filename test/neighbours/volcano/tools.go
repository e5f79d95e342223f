//go:build tools

// Package tools pins Volcano's controller-manager command in this module, so
// `go build volcano.sh/volcano/cmd/controller-manager` builds that exact release.
package tools

import _ "volcano.sh/volcano/cmd/controller-manager"
