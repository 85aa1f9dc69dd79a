// Package types is a stand-in for pkg.package-operator.run/boxcutter/machinery/types, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier. What does not: the Boxcutter applier
// (feature gate BoxcutterRuntime), whose engines return errors wrapping ErrUnavailable, and the Helm
// applier's drift-detection watches, which register nothing.
//
// This package holds the ErrUnavailable that the other stand-in packages re-export.
package types

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrUnavailable is wrapped by every error the stand-in returns.
var ErrUnavailable = errors.New("pkg.package-operator.run/boxcutter is not available in this build: " +
	"the Go module proxy refused it, so the Boxcutter applier cannot run")

// Revision is a set of phases to roll out together.
type Revision interface {
	GetName() string
	GetPhases() []Phase
}

// Phase is a named group of objects within a revision.
type Phase interface {
	GetName() string
	GetObjects() []client.Object
}

// RevisionReconcileOption configures a revision reconcile. The stand-in applies no options: an option is just its name.
type RevisionReconcileOption string

// RevisionTeardownOption configures a revision teardown. The stand-in applies no options: an option is just its name.
type RevisionTeardownOption string

// ObjectReconcileOption configures the reconcile of one object. The stand-in applies no options: an option is just its name.
type ObjectReconcileOption string

// ProbeStatus is the outcome of a probe.
type ProbeStatus string

// ProbeStatusTrue means the probe passed.
const ProbeStatusTrue ProbeStatus = "True"

// ProbeResult is the outcome of a probe with its messages.
type ProbeResult struct {
	Status   ProbeStatus
	Messages []string
}
