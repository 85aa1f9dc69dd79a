// Package machinery is a stand-in for pkg.package-operator.run/boxcutter/machinery, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier, which does not use this package. What does
// not: the Boxcutter applier (feature gate BoxcutterRuntime): RevisionEngine.Reconcile and Teardown
// return no result and an error wrapping ErrUnavailable. The Helm applier's drift-detection watches do
// not work either.
package machinery

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"pkg.package-operator.run/boxcutter/machinery/types"
	"pkg.package-operator.run/boxcutter/validation"
)

// ErrUnavailable is wrapped by every error the stand-in returns (it is types.ErrUnavailable).
var ErrUnavailable = types.ErrUnavailable

// Action is what reconciling an object did to it.
type Action string

// ActionCollision means the object is owned by someone else.
const ActionCollision Action = "Collision"

// ObjectResult is the outcome of reconciling one object. The stand-in never produces one.
type ObjectResult interface {
	Action() Action
	Object() client.Object
	ProbeResults() map[string]types.ProbeResult
	String() string
}

// PhaseResult is the outcome of reconciling one phase. The stand-in never produces one.
type PhaseResult interface {
	GetValidationError() error
	GetObjects() []ObjectResult
	IsComplete() bool
}

// RevisionResult is the outcome of reconciling a revision. The stand-in never produces one.
type RevisionResult interface {
	GetValidationError() error
	GetPhases() []PhaseResult
	InTransition() bool
	IsComplete() bool
	String() string
}

// RevisionTeardownResult is the outcome of tearing a revision down. The stand-in never produces one.
type RevisionTeardownResult interface {
	IsComplete() bool
}

// Comparator compares desired and actual objects. In the stand-in it has no behaviour.
type Comparator struct{}

// NewComparator returns a Comparator; its arguments are not used.
func NewComparator(discoveryClient discovery.DiscoveryInterface, scheme *runtime.Scheme, fieldOwner string) *Comparator {
	return &Comparator{}
}

// ObjectEngine reconciles single objects. In the stand-in it has no behaviour.
type ObjectEngine struct{}

// NewObjectEngine returns an ObjectEngine; its arguments are not used.
func NewObjectEngine(
	scheme *runtime.Scheme,
	cache client.Reader,
	writer client.Client,
	comparator *Comparator,
	fieldOwner, systemPrefix, managedBy string,
	reader client.Reader,
) *ObjectEngine {
	return &ObjectEngine{}
}

// PhaseEngine reconciles phases. In the stand-in it has no behaviour.
type PhaseEngine struct{}

// NewPhaseEngine returns a PhaseEngine; its arguments are not used.
func NewPhaseEngine(objectEngine *ObjectEngine, validator *validation.ClusterPhaseValidator) *PhaseEngine {
	return &PhaseEngine{}
}

// RevisionEngine reconciles and tears down revisions. In the stand-in it always fails with ErrUnavailable.
type RevisionEngine struct{}

// NewRevisionEngine returns a RevisionEngine; its arguments are not used.
func NewRevisionEngine(phaseEngine *PhaseEngine, validator *validation.RevisionValidator, writer client.Client) *RevisionEngine {
	return &RevisionEngine{}
}

// Reconcile returns no result and an error wrapping ErrUnavailable.
func (*RevisionEngine) Reconcile(
	_ context.Context, _ types.Revision, _ ...types.RevisionReconcileOption,
) (RevisionResult, error) {
	return nil, fmt.Errorf("boxcutter RevisionEngine.Reconcile: %w", ErrUnavailable)
}

// Teardown returns no result and an error wrapping ErrUnavailable.
func (*RevisionEngine) Teardown(
	_ context.Context, _ types.Revision, _ ...types.RevisionTeardownOption,
) (RevisionTeardownResult, error) {
	return nil, fmt.Errorf("boxcutter RevisionEngine.Teardown: %w", ErrUnavailable)
}
