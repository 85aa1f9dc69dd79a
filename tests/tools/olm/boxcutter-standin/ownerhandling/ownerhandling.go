// Package ownerhandling is a stand-in for pkg.package-operator.run/boxcutter/ownerhandling, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier, which does not use this package. What does
// not: the Boxcutter applier (feature gate BoxcutterRuntime), the only user of this package, and the Helm
// applier's drift-detection watches.
package ownerhandling

import "k8s.io/apimachinery/pkg/runtime"

// Native is an owner-reference strategy. In the stand-in it has no behaviour: it is only handed to
// boxcutter.NewRevisionWithOwner.
type Native struct{}

// NewNative returns a Native strategy; the scheme is not used.
func NewNative(scheme *runtime.Scheme) *Native {
	return &Native{}
}
