"""What the sync loop reads from a cluster, and its leader election, through the official ``kubernetes`` client.

``Cluster`` implements ``webhook.sync.sources.ClusterView``: installed bundles from ClusterExtensions'
``status.install.bundle`` (``olm.operatorframework.io/v1``), the API server's ``/version`` for catalog image
templates, one object by group/version/kind for GVK templates (through API discovery), and the add-on lookups
(Open Cluster Management): a ClusterManagementAddOn and a ManagedClusterAddOn
(``addon.open-cluster-management.io/v1alpha1``), PlacementDecisions by their Placement's label
(``cluster.open-cluster-management.io/v1beta1``), through ``CustomObjectsApi``. A kind the cluster does not
serve reads as absent (HTTP 404), as does a missing object.

``LeaseElector`` keeps one active replica with a ``coordination.k8s.io/v1`` Lease, as client-go's
``leaderelection`` does: a Lease held by someone else whose ``renewTime + leaseDurationSeconds`` has not passed
is respected; otherwise it is taken (``acquireTime``, ``leaseTransitions + 1``) or renewed (``renewTime``).
Updates carry the Lease's ``resourceVersion``, so two replicas racing for it cannot both win (409 Conflict).

The kubeconfig is loaded here (in-cluster service account first, then ``KUBECONFIG`` or ``~/.kube/config``)
because no shared loader exists yet in ``webhook.io.kube``. Every API failure raises ``ClusterError``.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError
from urllib3.exceptions import HTTPError

from webhook import logs
from webhook.errors import ClusterError, ClusterUnavailable, InputError, UpgradeGateError, outage

OLM_GROUP, OLM_VERSION = "olm.operatorframework.io", "v1"
ADDON_GROUP, ADDON_VERSION = "addon.open-cluster-management.io", "v1alpha1"
PLACEMENT_GROUP, PLACEMENT_VERSION = "cluster.open-cluster-management.io", "v1beta1"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
WORK_GROUP, WORK_VERSION = "work.open-cluster-management.io", "v1"
ADDON_LABEL = "open-cluster-management.io/addon-name"

log = logging.getLogger(__name__)


def connect(kubeconfig: Path | None = None, *, in_cluster_first: bool = True) -> Any:
    """An ``ApiClient``: the in-cluster configuration when running in a pod, else the kubeconfig (``kubeconfig``,
    ``$KUBECONFIG``, ``~/.kube/config``). With ``in_cluster_first=False`` a given ``kubeconfig`` wins, as kubectl's
    ``--kubeconfig`` does.

    Raises ``ClusterError`` (``no cluster configuration: <file>: <why>``, one line) when no configuration loads,
    including a file that is no kubeconfig (not YAML, not a mapping, an unknown context: the client's loader raises
    ``TypeError`` or YAML errors for those).
    """
    configuration = client.Configuration()
    if in_cluster_first or kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return client.ApiClient(configuration)
        except ConfigException:
            pass
    named = str(kubeconfig) if kubeconfig else os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None, client_configuration=configuration
        )
    except (ConfigException, OSError) as error:
        reason = " ".join(str(error).split())
        where = "" if named in reason else f"{named}: "
        raise ClusterError(f"no cluster configuration: {where}{reason}") from None
    except Exception as error:  # the loader on a file that is no kubeconfig: yaml.YAMLError, TypeError, ...
        reason = " ".join(str(error).split())
        raise ClusterError(f"no cluster configuration: {named} is not a kubeconfig: {reason}") from None
    return client.ApiClient(configuration)


class Cluster:
    """The sync loop's read-only view of a cluster (``get``/``list`` on ClusterExtensions and add-on objects,
    ``/version``)."""

    def __init__(self, api_client: Any) -> None:
        self._api = api_client

    def installed_bundles(self) -> dict[str, tuple[str, str]]:
        """``{ClusterExtension name: (bundle name, version)}`` for every ClusterExtension with an installed
        bundle."""
        answer = _call(
            "list clusterextensions",
            client.CustomObjectsApi(self._api).list_cluster_custom_object,
            OLM_GROUP,
            OLM_VERSION,
            "clusterextensions",
        )
        found = {}
        for item in answer.get("items", []):
            bundle = ((item.get("status") or {}).get("install") or {}).get("bundle") or {}
            if bundle.get("name") and bundle.get("version"):
                found[item["metadata"]["name"]] = (str(bundle["name"]), str(bundle["version"]))
        return found

    def server_version(self) -> str:
        """The API server's ``gitVersion`` (``v1.31.2``)."""
        info = _call("get /version", client.VersionApi(self._api).get_code)
        return str(info.git_version)

    def get_object(self, api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
        """One object (as a dict) by apiVersion, kind, name and namespace (empty for cluster-scoped); ``None``
        when the kind is not served or the object does not exist."""
        try:
            dynamic = DynamicClient(self._api)  # type: ignore[no-untyped-call]
            resource = dynamic.resources.get(api_version=api_version, kind=kind)
            found = resource.get(name=name, namespace=namespace or None)
        except (ResourceNotFoundError, NotFoundError):
            return None
        except ApiException as error:
            raise _refused(f"get {kind} {name}", error.status, error.reason) from None
        return dict(found.to_dict())

    def cluster_management_addon(self, name: str) -> dict[str, Any] | None:
        """The ClusterManagementAddOn ``name`` (cluster-scoped), or ``None``."""
        return _object(
            f"get clustermanagementaddon {name}",
            client.CustomObjectsApi(self._api).get_cluster_custom_object,
            ADDON_GROUP,
            ADDON_VERSION,
            "clustermanagementaddons",
            name,
        )

    def managed_cluster_addon(self, name: str, namespace: str) -> dict[str, Any] | None:
        """The ManagedClusterAddOn ``name`` in the cluster namespace ``namespace``, or ``None``."""
        return _object(
            f"get managedclusteraddon {namespace}/{name}",
            client.CustomObjectsApi(self._api).get_namespaced_custom_object,
            ADDON_GROUP,
            ADDON_VERSION,
            namespace,
            "managedclusteraddons",
            name,
        )

    def placement_decisions(self, namespace: str, placement: str) -> list[dict[str, Any]]:
        """The PlacementDecisions in ``namespace`` labelled ``cluster.open-cluster-management.io/placement=
        <placement>``, sorted by name, each with its ``apiVersion`` and ``kind``; empty when none."""
        selector = f"{PLACEMENT_LABEL}={placement}"
        return self._labelled(PLACEMENT_GROUP, PLACEMENT_VERSION, "PlacementDecision", namespace, selector)

    def manifest_works(self, namespace: str, addon: str) -> list[dict[str, Any]]:
        """The ManifestWorks in cluster namespace ``namespace`` labelled ``open-cluster-management.io/addon-name=
        <addon>``, sorted by name, each with its ``apiVersion`` and ``kind``; empty when none."""
        return self._labelled(WORK_GROUP, WORK_VERSION, "ManifestWork", namespace, f"{ADDON_LABEL}={addon}")

    def addon_templates(self, addon: str) -> list[dict[str, Any]]:
        """The AddOnTemplates (cluster-scoped) whose ``spec.addonName`` is ``addon``, sorted by name, each with its
        ``apiVersion`` and ``kind``; empty when none. The API has no field selector for ``spec.addonName``: every
        template is listed and filtered here."""
        answer = _call(
            "list addontemplates",
            client.CustomObjectsApi(self._api).list_cluster_custom_object,
            ADDON_GROUP,
            ADDON_VERSION,
            "addontemplates",
            missing_ok=True,
        )
        found = _items(answer, f"{ADDON_GROUP}/{ADDON_VERSION}", "AddOnTemplate")
        return [item for item in found if (item.get("spec") or {}).get("addonName") == addon]

    def _labelled(self, group: str, version: str, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        """The objects of ``kind`` (plural: its lower-cased name and ``s``) in ``namespace`` matching the label
        ``selector``, sorted by name; empty when none or the kind is not served."""
        plural = f"{kind.lower()}s"
        answer = _call(
            f"list {plural} in {namespace} ({selector})",
            client.CustomObjectsApi(self._api).list_namespaced_custom_object,
            group,
            version,
            namespace,
            plural,
            label_selector=selector,
            missing_ok=True,
        )
        return _items(answer, f"{group}/{version}", kind)

    # What ``upgrade-gate doctor`` reads (``webhook.controller.doctor``): plain JSON dicts, as the API serves them.
    # Plain GETs through the ApiClient (its authentication and TLS), not the generated API classes: importing those
    # costs about a second per command run, the requests themselves a few milliseconds.

    #: ``Accept`` of a list as ``PartialObjectMetadataList``: every item's metadata, nothing else.
    _METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    #: Seconds each of these reads may take: (connect, read).
    _READ_TIMEOUT_S = (5, 30)

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path | None = None) -> Cluster:
        """A ``Cluster`` over ``kubeconfig`` when one is given (it wins over the in-cluster configuration, as
        kubectl's ``--kubeconfig`` does), else over ``connect()``'s configuration (in-cluster, ``KUBECONFIG``,
        ``~/.kube/config``). Raises ``InputError`` with ``connect()``'s one line when no configuration loads."""
        try:
            return cls(connect(kubeconfig, in_cluster_first=kubeconfig is None))
        except ClusterError as error:
            raise InputError(str(error)) from None

    def deployments(self, *, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]:
        """The ``apps/v1`` Deployments of every namespace that match ``label_selector`` and ``field_selector``
        (e.g. ``metadata.name=NAME``), each with its ``apiVersion`` and ``kind``, sorted by namespace and name."""
        query = [("labelSelector", label_selector), ("fieldSelector", field_selector)]
        answer = self._get_json("list deployments", "/apis/apps/v1/deployments", [(k, v) for k, v in query if v])
        return _items(answer, "apps/v1", "Deployment")

    def secret_metadata(self, label_selector: str) -> list[dict[str, Any]]:
        """The metadata (as ``PartialObjectMetadata``: no ``data``, no ``type``) of the Secrets of every namespace
        labelled ``label_selector``, sorted by namespace and name. Metadata only keeps release payloads and
        credentials off the wire; RBAC still asks for ``list`` on ``secrets``."""
        what, query = f"list secrets {label_selector}", [("labelSelector", label_selector)]
        answer = self._get_json(what, "/api/v1/secrets", query, accept=self._METADATA_LIST)
        return _items(answer, "v1", "Secret")

    def cluster_object_set_metadata(self, label_selector: str) -> list[dict[str, Any]] | None:
        """The metadata of the ``ClusterObjectSets`` (``olm.operatorframework.io/v1``, written by OLM v1's
        Boxcutter applier) labelled ``label_selector``, sorted by name; ``None`` when the cluster does not
        serve the kind."""
        answer = self._get_json(
            f"list clusterobjectsets {label_selector}",
            f"/apis/{OLM_GROUP}/{OLM_VERSION}/clusterobjectsets",
            [("labelSelector", label_selector)],
            accept=self._METADATA_LIST,
            missing_ok=True,
        )
        return None if answer is None else _items(answer, f"{OLM_GROUP}/{OLM_VERSION}", "ClusterObjectSet")

    def validating_webhook_configurations(self) -> list[dict[str, Any]]:
        """Every ``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration, sorted by name."""
        path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
        answer = self._get_json("list validatingwebhookconfigurations", path)
        return _items(answer, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")

    def custom_resource_definition(self, name: str) -> dict[str, Any] | None:
        """The CustomResourceDefinition ``name`` (``plural.group``), or ``None``."""
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{self._segment(name)}"
        return self._get_json(f"get customresourcedefinition {name}", path, missing_ok=True)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap ``namespace/name``, or ``None``."""
        path = f"/api/v1/namespaces/{self._segment(namespace)}/configmaps/{self._segment(name)}"
        return self._get_json(f"get configmap {namespace}/{name}", path, missing_ok=True)

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace ``name`` (its labels are what a webhook's ``namespaceSelector`` matches), or ``None``."""
        return self._get_json(f"get namespace {name}", f"/api/v1/namespaces/{self._segment(name)}", missing_ok=True)

    def service_proxy_get(
        self, namespace: str, service: str, port: int | str, path: str, *, scheme: str = "https", timeout_s: float = 5
    ) -> dict[str, Any]:
        """GET ``path`` of the Service ``namespace/service`` through the API server's service proxy
        (``/api/v1/namespaces/NS/services/SCHEME:NAME:PORT/proxy/PATH``; the API server does not verify the
        backend's certificate there), as ``{"status": int, "body": str}``: whatever the API server answers,
        its own refusals included (403: RBAC grants no ``get`` on ``services/proxy``; 503: no ready endpoint;
        404: no such Service), whose ``body`` is then the Status ``message``. Raises ``ClusterError`` only when
        the API server itself cannot be reached."""
        target = self._segment(f"{scheme}:{service}:{port}")
        proxy = f"/api/v1/namespaces/{self._segment(namespace)}/services/{target}/proxy"
        what = f"GET {path} of service {namespace}/{service} through the API server's proxy"
        status, reason, data = self._get(what, f"{proxy}/{path.lstrip('/')}", [], "*/*", timeout_s)
        body = data.decode("utf-8", "replace")
        return {"status": status, "body": body if status < 400 else self._status_message(body, reason)}

    def _get(
        self, what: str, path: str, query: list[tuple[str, str]], accept: str, timeout: Any
    ) -> tuple[int, str, bytes]:
        """GET ``path`` with the client's authentication: ``(status, reason, body)``, whatever the status.
        Raises ``ClusterError`` naming ``what`` when the API server cannot be reached."""
        method, url, headers, _, _ = self._api.param_serialize(
            "GET", path, query_params=query, header_params={"Accept": accept}, auth_settings=["BearerToken"]
        )
        answer = _call(what, self._api.call_api, method, url, header_params=headers, _request_timeout=timeout)
        response = answer.response
        return int(answer.status), str(response.reason or ""), bytes(response.data or b"")

    def _get_json(
        self,
        what: str,
        path: str,
        query: list[tuple[str, str]] | None = None,
        *,
        accept: str = "application/json",
        missing_ok: bool = False,
    ) -> dict[str, Any] | None:
        """The JSON the API serves at ``path``; ``None`` for HTTP 404 with ``missing_ok`` (no such object, or a kind
        the cluster does not serve). Other failures raise ``ClusterError``: ``<what>: <status> <reason>``, as
        ``_call`` words them."""
        status, reason, data = self._get(what, path, query or [], accept, self._READ_TIMEOUT_S)
        if status == 404 and missing_ok:
            return None
        if status >= 400:
            raise _refused(what, status, reason)
        return dict(json.loads(data))

    @staticmethod
    def _segment(text: str) -> str:
        """``text`` as one URL path segment (``:`` kept, as in ``https:NAME:443``)."""
        return urllib.parse.quote(text, safe=":")

    @staticmethod
    def _status_message(body: str, reason: str) -> str:
        """The ``message`` of a ``metav1.Status`` body, else the body itself on one line, else ``reason``."""
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            message = None
        return str(message or " ".join(body.split()) or reason)


class LeaseElector:
    """Leader election on the Lease ``name`` in ``namespace`` for ``identity`` (client-go semantics)."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        identity: str,
        *,
        duration_s: float = 15.0,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self._api = client.CoordinationV1Api(api_client)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.duration_s = duration_s
        self._clock = clock
        self._leader = threading.Event()
        self.problem: str | None = None

    @property
    def is_leader(self) -> bool:
        """True while the last ``try_acquire`` won or renewed the Lease."""
        return self._leader.is_set()

    def try_acquire(self) -> bool:
        """Take or renew the Lease if it is free, expired or ours; True when we hold it afterwards.

        A conflict (someone else updated it first) is a lost round, not an error. A missing namespace raises
        ``InputError`` naming it; other API failures (refused, unreachable) raise ``ClusterError``.
        """
        now = self._clock()
        where = f"lease {self.namespace}/{self.name}"
        lease = _call(f"get {where}", self._api.read_namespaced_lease, self.name, self.namespace, missing_ok=True)
        if lease is None:
            return self._won(self._create(now))
        spec = lease.spec or client.V1LeaseSpec()
        holder = spec.holder_identity
        if holder and holder != self.identity and not self._expired(spec, now):
            return self._won(False)
        if holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + (1 if holder else 0)
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = int(self.duration_s)
        spec.renew_time = now
        lease.spec = spec
        try:
            self._api.replace_namespaced_lease(self.name, self.namespace, lease)
        except ApiException as error:
            if error.status == 409:
                return self._won(False)
            raise _refused(f"update {where}", error.status, error.reason) from None
        except (OSError, HTTPError) as error:
            raise ClusterUnavailable(f"update {where}: {error}") from None
        return self._won(True)

    def keep(self, stop: threading.Event) -> None:
        """Try to take or renew the Lease every third of its duration until ``stop`` is set (run in a thread);
        a failure counts as not being the leader. ``problem`` says what failed last (``None`` once it works
        again); a failure is logged once, as a warning, until it changes or ends, not at every try."""
        while not stop.is_set():
            try:
                self.try_acquire()
            except UpgradeGateError as error:
                self._leader.clear()
                if str(error) != self.problem:
                    log.warning("leader election failing", extra=logs.fields({logs.ERROR: str(error)}))
                self.problem = str(error)
            else:
                if self.problem is not None:
                    log.info("leader election works again", extra=logs.fields({}))
                self.problem = None
            stop.wait(self.duration_s / 3)

    def _create(self, now: datetime.datetime) -> bool:
        spec = client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.duration_s),
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        )
        lease = client.V1Lease(metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace), spec=spec)
        try:
            self._api.create_namespaced_lease(self.namespace, lease)
        except ApiException as error:
            if error.status == 409:
                return False
            if error.status == 404:
                raise InputError(
                    f'namespace "{self.namespace}" does not exist: the Lease {self.name} is kept there '
                    "(POD_NAMESPACE); create the namespace, set POD_NAMESPACE, or turn leader election off"
                ) from None
            raise _refused(f"create lease {self.namespace}/{self.name}", error.status, error.reason) from None
        except (OSError, HTTPError) as error:
            raise ClusterUnavailable(f"create lease {self.namespace}/{self.name}: {error}") from None
        return True

    def _expired(self, spec: Any, now: datetime.datetime) -> bool:
        renewed = spec.renew_time or spec.acquire_time
        if renewed is None:
            return True
        duration = datetime.timedelta(seconds=spec.lease_duration_seconds or self.duration_s)
        return bool(renewed + duration < now)

    def _won(self, won: bool) -> bool:
        if won:
            self._leader.set()
        else:
            self._leader.clear()
        return won


def _items(answer: Mapping[str, Any] | None, api_version: str, kind: str) -> list[dict[str, Any]]:
    """The items of a list answer (``None``: none, or the kind is not served), each with ``apiVersion`` and
    ``kind`` (a list omits them), sorted by namespace and name."""
    items = [{**item, "apiVersion": api_version, "kind": kind} for item in (answer or {}).get("items") or []]
    return sorted(items, key=lambda item: (item["metadata"].get("namespace", ""), item["metadata"]["name"]))


def _object(what: str, function: Callable[..., Any], *args: Any) -> dict[str, Any] | None:
    """One object as a dict, ``None`` when absent (``_call`` with ``missing_ok``)."""
    found = _call(what, function, *args, missing_ok=True)
    return dict(found) if found is not None else None


def _call(what: str, function: Callable[..., Any], *args: Any, missing_ok: bool = False, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``; failures raise ``ClusterError`` naming ``what``. With ``missing_ok``, HTTP
    404 (no such object, or a kind the cluster does not serve) returns ``None``."""
    try:
        return function(*args, **kwargs)
    except ApiException as error:
        if missing_ok and error.status == 404:
            return None
        raise _refused(what, error.status, error.reason) from None
    except (OSError, HTTPError) as error:
        raise ClusterUnavailable(f"{what}: {error}") from None


def _refused(what: str, status: int | None, reason: str | None) -> ClusterError:
    """The error of an API call answered HTTP ``status``: ``<what>: <status> <reason>``, a ``ClusterUnavailable``
    for 5xx and 429 (Too Many Requests: API Priority and Fairness), else a ``ClusterError`` (403, 422, ...)."""
    return (ClusterUnavailable if outage(status) else ClusterError)(f"{what}: {status} {reason}")
