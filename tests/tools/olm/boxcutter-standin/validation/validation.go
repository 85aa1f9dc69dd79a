// Package validation is a stand-in for pkg.package-operator.run/boxcutter/validation, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier, which does not use this package. What does
// not: the Boxcutter applier (feature gate BoxcutterRuntime), the only user of these validators (they
// validate nothing, and the engines they are handed to fail with ErrUnavailable), and the Helm applier's
// drift-detection watches.
package validation

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterPhaseValidator validates a phase. In the stand-in it has no behaviour.
type ClusterPhaseValidator struct{}

// NewClusterPhaseValidator returns a ClusterPhaseValidator; its arguments are not used.
func NewClusterPhaseValidator(restMapper meta.RESTMapper, reader client.Reader) *ClusterPhaseValidator {
	return &ClusterPhaseValidator{}
}

// RevisionValidator validates a revision. In the stand-in it has no behaviour.
type RevisionValidator struct{}

// NewRevisionValidator returns a RevisionValidator.
func NewRevisionValidator() *RevisionValidator {
	return &RevisionValidator{}
}
