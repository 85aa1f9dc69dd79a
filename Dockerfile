# syntax=docker/dockerfile:1
# The upgrade-gate image: the package as pip installs it from source (console script `upgrade-gate`, the bundled
# policies in <prefix>/share/upgrade-gate/policies), those policies also at /app/policies, the chart's
# policies.bundledDir. The chart's default image (values.yaml image.*) is tagged with the package's version:
#   docker build -t ghcr.io/upgrade-gate/upgrade-gate:0.1.0 .
#   docker run --rm ghcr.io/upgrade-gate/upgrade-gate:0.1.0 --version

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
# git is the sync loop's transport; it is installed in the runtime stage. Nothing here needs a compiler:
# every dependency ships manylinux wheels.
COPY pyproject.toml README.md ./
COPY webhook/ webhook/
COPY policies/ policies/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --upgrade pip \
 && /opt/venv/bin/pip install .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="upgrade-gate" \
      org.opencontainers.image.description="Admission webhook and GitOps sync loop that govern operator upgrades" \
      org.opencontainers.image.licenses="Apache-2.0"
# git + openssh-client: the sync loop clones and pushes the GitOps repository (HTTPS or SSH).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 upgrade-gate \
 && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --shell /usr/sbin/nologin upgrade-gate
COPY --from=build /opt/venv /opt/venv
# One copy of the policies: the installed package's.
RUN mkdir /app && ln -s /opt/venv/share/upgrade-gate/policies /app/policies
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
WORKDIR /app
# Numeric so that Kubernetes can verify runAsNonRoot without a runAsUser.
USER 10001:10001
EXPOSE 8443
ENTRYPOINT ["upgrade-gate"]
CMD ["--help"]
