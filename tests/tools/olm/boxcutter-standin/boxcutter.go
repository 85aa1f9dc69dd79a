// Package boxcutter is a stand-in for pkg.package-operator.run/boxcutter, written for upgrade-gate's
// integration tests (tests/tools/olm) because the Go module proxy refuses every version of the real
// module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code uses, so
// that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier (managedcache's TrackingCache is a no-op).
// What does not: the Boxcutter applier (feature gate BoxcutterRuntime), whose engines and cache reads
// fail with errors wrapping ErrUnavailable, and the Helm applier's drift-detection watches, which
// register nothing and never fire.
//
// This package only builds revisions and options as plain data; the options are applied by nobody.
package boxcutter

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"pkg.package-operator.run/boxcutter/machinery/types"
	"pkg.package-operator.run/boxcutter/ownerhandling"
	"pkg.package-operator.run/boxcutter/probing"
)

// ErrUnavailable is wrapped by every error the stand-in returns (it is types.ErrUnavailable).
var ErrUnavailable = types.ErrUnavailable

// ProgressProbeType names the probe that decides whether an object has rolled out.
const ProgressProbeType = "Progress"

// Phase is a named group of objects.
type Phase = types.Phase

// RevisionReconcileOption configures a revision reconcile.
type RevisionReconcileOption = types.RevisionReconcileOption

// ObjectReconcileOption configures the reconcile of one object.
type ObjectReconcileOption = types.ObjectReconcileOption

// RevisionBuilder is a revision built by NewRevisionWithOwner.
type RevisionBuilder interface {
	types.Revision
}

type phase struct {
	name    string
	objects []client.Object
}

func (p *phase) GetName() string             { return p.name }
func (p *phase) GetObjects() []client.Object { return p.objects }

// NewPhase returns a phase holding name and objects.
func NewPhase(name string, objects []client.Object) Phase {
	return &phase{name: name, objects: objects}
}

type revision struct {
	name   string
	phases []Phase
}

func (r *revision) GetName() string    { return r.name }
func (r *revision) GetPhases() []Phase { return r.phases }

// NewRevisionWithOwner returns a revision holding name and phases; the revision number, owner and
// owner strategy are not kept, since nothing in the stand-in acts on them.
func NewRevisionWithOwner(
	name string, revisionNumber int64, phases []Phase, owner client.Object, ownerStrategy *ownerhandling.Native,
) RevisionBuilder {
	return &revision{name: name, phases: phases}
}

// WithSiblingOwners returns an option naming itself; it is applied by nobody.
func WithSiblingOwners(owners []client.Object) RevisionReconcileOption {
	return "WithSiblingOwners"
}

// WithProbe returns an option naming itself; it is applied by nobody.
func WithProbe(probeType string, probe probing.Prober) RevisionReconcileOption {
	return RevisionReconcileOption("WithProbe(" + probeType + ")")
}

// WithAggregatePhaseReconcileErrors returns an option naming itself; it is applied by nobody.
func WithAggregatePhaseReconcileErrors() RevisionReconcileOption {
	return "WithAggregatePhaseReconcileErrors"
}

// WithObjectReconcileOptions returns an option naming itself; it is applied by nobody.
func WithObjectReconcileOptions(obj client.Object, opts ...ObjectReconcileOption) RevisionReconcileOption {
	return "WithObjectReconcileOptions"
}

// WithCollisionProtection returns an option naming itself and cp; it is applied by nobody.
// It is generic so that it accepts any string type (operator-controller passes its own).
func WithCollisionProtection[CP ~string](cp CP) ObjectReconcileOption {
	return ObjectReconcileOption("WithCollisionProtection(" + string(cp) + ")")
}
