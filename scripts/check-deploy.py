#!/usr/bin/env python3
"""What the schema cannot see in Dockerfile, compose.yaml and deploy/kubernetes/ (scripts/check-deploy.sh
runs it), and the Kubernetes manifests against the API's own schemas.

- Every VOICED_* variable either file sets is a setting of config/default.toml (a typo would be
  ignored by voiced at start-up), and every value parses as that setting's type.
- Every voiced service runs a real subcommand and has the database URL; serve processes run no
  workers, share Redis and one signing secret, and workers do not listen on the public port.
- Each voiced service stops more slowly than its own shutdown grace (so that work is handed back
  before the kill), and metrics listeners are never published.
- nginx's upstream points at the serve processes' port, and the image's default bind matches
  its EXPOSE.
- nginx sends X-Forwarded-For, and serve trusts nginx's fixed address (VOICED_TRUSTED_PROXIES)
  and nothing wider than it: otherwise every client is one client to the limiters.
- compose.yaml ships no credential: the database password (PostgreSQL's and the one in every
  database URL) and the S3 keys are `${VAR:?message}` references, so compose refuses to start
  without them; serve and every worker carry the one signing secret (a worker without it seals
  webhook secrets under a key of its own, and abandons every webhook).
- deploy/kubernetes/: every manifest valid (strict: no unknown field) against the Kubernetes
  JSON schemas bundled in kubernetes-validate, for the oldest and the newest version named in
  KUBERNETES_VERSIONS; kustomization.yaml lists every manifest beside it. Then the same rules
  as for compose (settings, roles, grace above shutdown_grace_secs plus any preStop sleep),
  and: probes on /healthz (liveness, startup) and /readyz (readiness) of the serve port, the
  Service on that port and never on the metrics one, the image's non-root uid, memory requests
  and limits, PodDisruptionBudgets that select pods, an autoscaler on a metric voiced exports,
  and a committed signing secret that voiced would refuse (a placeholder, never a real one).
"""

import base64
import ipaddress
import re
import sys
import tomllib
from pathlib import Path

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
SUBCOMMANDS = {"serve", "worker", "migrate", "admin", "models", "openapi"}
errors: list[str] = []


def check(condition: bool, message: str) -> None:
    if not condition:
        errors.append(message)


defaults = tomllib.loads((ROOT / "config/default.toml").read_text())


def check_setting(where: str, name: str, value: str) -> None:
    if not name.startswith("VOICED_"):
        return
    key = name.removeprefix("VOICED_").lower()
    if key in {"log", "config", "pg_bin"}:  # read outside the settings table (docs)
        return
    if key not in defaults:
        errors.append(f"{where}: {name} is not a setting of config/default.toml")
        return
    default = defaults[key]
    if isinstance(default, bool):
        check(value in {"true", "false", "1", "0"}, f"{where}: {name}={value!r} is not a boolean")
    elif isinstance(default, int):
        check(re.fullmatch(r"\d+", value) is not None, f"{where}: {name}={value!r} is not a number")


def seconds(duration: str) -> float:
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


# Dockerfile: ENV settings, the default bind and EXPOSE.
dockerfile = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
image_env: dict[str, str] = {}
for line in dockerfile.splitlines():
    if line.startswith("ENV "):
        for name, value in re.findall(r"(\w+)=(\S+)", line):
            image_env[name] = value
for name, value in image_env.items():
    check_setting("Dockerfile ENV", name, value)
exposed = {int(p) for line in dockerfile.splitlines() if line.startswith("EXPOSE ") for p in line.split()[1:]}
bind_port = int(image_env.get("VOICED_BIND", "127.0.0.1:8080").rsplit(":", 1)[1])
check(bind_port in exposed, f"Dockerfile: VOICED_BIND port {bind_port} is not exposed ({exposed})")

# compose.yaml
compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
services = compose["services"]
voiced = {name: s for name, s in services.items() if s.get("image") == "voiced:local"}
check({"serve", "worker", "migrate"} <= voiced.keys(), f"compose: voiced services {sorted(voiced)}")
secrets = set()
for name, service in voiced.items():
    env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
    for key, value in env.items():
        check_setting(f"compose {name}", key, value)
    command = service.get("command") or ["serve"]
    check(command[0] in SUBCOMMANDS, f"compose {name}: unknown subcommand {command[0]}")
    check("VOICED_DATABASE_URL" in env, f"compose {name}: no VOICED_DATABASE_URL")
    for port in service.get("ports") or []:
        metrics = int(env.get("VOICED_METRICS_BIND", ":0").rsplit(":", 1)[1])
        check(str(metrics) not in str(port).split(":")[-1:], f"compose {name}: metrics port published")
    if command[0] in {"serve", "worker"}:
        grace = float(env.get("VOICED_SHUTDOWN_GRACE_SECS", defaults["shutdown_grace_secs"]))
        stop = seconds(service.get("stop_grace_period", "10s"))
        check(stop > grace, f"compose {name}: stop_grace_period {stop}s is not above the {grace}s grace")
    if command[0] == "serve":
        check(env.get("VOICED_WORKERS") == "0", f"compose {name}: serve runs in-process workers")
        check(env.get("VOICED_REDIS_URL", "").startswith("redis://"), f"compose {name}: no shared Redis")
        check("VOICED_SIGNING_SECRET" in env, f"compose {name}: no shared signing secret")
        secrets.add(env.get("VOICED_SIGNING_SECRET"))
        serve_port = int(env.get("VOICED_BIND", image_env["VOICED_BIND"]).rsplit(":", 1)[1])
    if command[0] == "worker":
        check("VOICED_BIND" not in env, f"compose {name}: a worker does not listen")
        # Its audio reaches the serve processes' streaming requests through Redis.
        check(env.get("VOICED_REDIS_URL", "").startswith("redis://"), f"compose {name}: worker without Redis")
check(len(secrets) == 1, "compose: serve processes must share one signing secret")

# Credentials from the environment only, and the signing secret on serve and workers alike.
REQUIRED_FROM_ENV = re.compile(r"^\$\{\w+:\?[^}]+\}$")


def from_environment(value: str) -> bool:
    return REQUIRED_FROM_ENV.match(value) is not None


for name, service in services.items():
    env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
    for key in ("POSTGRES_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        if key in env:
            check(from_environment(env[key]), f"compose {name}: {key} is fixed, not ${{{key}:?…}}")
    for key, value in env.items():
        url = re.match(r"^postgres(?:ql)?://[^:/@]+:(.*)@", value)
        if url:
            check(from_environment(url.group(1)), f"compose {name}: {key} has a fixed password")
signing = set()
for name, service in voiced.items():
    command = service.get("command") or ["serve"]
    if command[0] in {"serve", "worker"}:
        env = {k: str(v) for k, v in (service.get("environment") or {}).items()}
        check("VOICED_SIGNING_SECRET" in env, f"compose {name}: no VOICED_SIGNING_SECRET")
        signing.add(env.get("VOICED_SIGNING_SECRET"))
check(len(signing) == 1, "compose: serve and worker processes must share one signing secret")

# nginx in front of the serve processes.
nginx = compose["configs"]["nginx"]["content"]
upstream = re.search(r"upstream\s+\w+\s*\{\s*server\s+(\w+):(\d+);", nginx)
check(upstream is not None, "compose: nginx has no upstream")
if upstream:
    check(upstream.group(1) in services, f"nginx upstream {upstream.group(1)} is not a service")
    check(int(upstream.group(2)) == serve_port, "nginx upstream port is not the serve port")

# Client addresses behind nginx.
check("X-Forwarded-For $$proxy_add_x_forwarded_for" in nginx, "compose: nginx does not send X-Forwarded-For")
lb = next((s for s in services.values() if str(s.get("image", "")).startswith("nginx")), {})
lb_address = ((lb.get("networks") or {}).get("default") or {}).get("ipv4_address")
check(lb_address is not None, "compose: nginx has no fixed address to trust")
for name, service in voiced.items():
    command = service.get("command") or ["serve"]
    if command[0] != "serve":
        continue
    trusted = str((service.get("environment") or {}).get("VOICED_TRUSTED_PROXIES", ""))
    try:
        nets = [ipaddress.ip_network(t.strip()) for t in re.split(r"[,\s]+", trusted) if t.strip()]
    except ValueError as err:
        errors.append(f"compose {name}: VOICED_TRUSTED_PROXIES: {err}")
        nets = []
    check(bool(nets), f"compose {name}: no VOICED_TRUSTED_PROXIES for nginx")
    if lb_address and nets:
        address = ipaddress.ip_address(lb_address)
        check(any(address in n for n in nets), f"compose {name}: nginx {lb_address} is not trusted")
        check(all(n.num_addresses == 1 for n in nets), f"compose {name}: trusts more than nginx")
# deploy/kubernetes: the schema first, then the same rules as compose.
KUBERNETES = ROOT / "deploy/kubernetes"
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")  # the oldest supported here, the newest bundled
image_user = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")]
check(len(image_user) == 1 and image_user[0].isdigit(), f"Dockerfile: USER {image_user}, not one uid")
image_uid = int(image_user[0]) if image_user and image_user[0].isdigit() else None

manifests: dict[str, list[dict]] = {}
for file in sorted(KUBERNETES.rglob("*.yaml")):
    manifests[str(file.relative_to(KUBERNETES))] = [doc for doc in yaml.safe_load_all(file.read_text()) if doc]
# Each folder has a kustomization.yaml listing every manifest beside it (none forgotten).
for folder in sorted({Path(name).parent for name in manifests}):
    where = str(folder / "kustomization.yaml")
    kustomization = (manifests.pop(where, None) or [{}])[0]
    check("resources" in kustomization, f"{where}: missing, or lists no resources")
    listed = {str(folder / name) for name in kustomization.get("resources") or []}
    beside = {name for name in manifests if Path(name).parent == folder}
    check(listed == beside, f"{where} lists {sorted(listed)}, the folder holds {sorted(beside)}")

resources = [(where, doc) for where, docs in manifests.items() for doc in docs]
for where, doc in resources:
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            field = ".".join(str(p) for p in e.path)
            resource = f"{doc['kind']}/{doc['metadata']['name']}"
            errors.append(f"{where}: {resource} (Kubernetes {version}): {field}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            errors.append(f"{where}: {e.message}")


def named(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for _, doc in resources if doc["kind"] == kind}


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


config_maps = {name: doc.get("data") or {} for name, doc in named("ConfigMap").items()}
secrets_k8s = {
    name: {
        **{k: base64.b64decode(v).decode() for k, v in (doc.get("data") or {}).items()},
        **(doc.get("stringData") or {}),
    }
    for name, doc in named("Secret").items()
}
for kind, sources in (("ConfigMap", config_maps), ("Secret", secrets_k8s)):
    for name, data in sources.items():
        for key, value in data.items():
            check_setting(f"kubernetes {kind} {name}", key, str(value))
for name, data in secrets_k8s.items():
    secret = data.get("VOICED_SIGNING_SECRET")
    real = secret is not None and len(secret) >= 32
    check(not real, f"kubernetes Secret {name}: VOICED_SIGNING_SECRET is usable; commit a placeholder")


def prestop_seconds(container: dict) -> float:
    pre_stop = (container.get("lifecycle") or {}).get("preStop") or {}
    command = (pre_stop.get("exec") or {}).get("command") or []
    if len(command) == 2 and command[0] == "sleep":
        return seconds(command[1]) or float(command[1])
    return float((pre_stop.get("sleep") or {}).get("seconds", 0))


def http_probe(container: dict, probe: str) -> tuple[str, object] | None:
    get = (container.get(probe) or {}).get("httpGet")
    return (get["path"], get["port"]) if get else None


workloads = {**named("Deployment"), **named("Job")}
roles: dict[str, str] = {}
serve_pods: list[tuple[dict, int]] = []
for name, workload in workloads.items():
    pod = workload["spec"]["template"]["spec"]
    where = f"kubernetes {workload['kind']} {name}"
    pod_security = pod.get("securityContext") or {}
    for container in pod["containers"]:
        env: dict[str, str] = {}
        for source in container.get("envFrom") or []:
            for kind, pool in (("configMapRef", config_maps), ("secretRef", secrets_k8s)):
                if kind in source:
                    ref = source[kind]["name"]
                    check(ref in pool, f"{where}: envFrom names {kind} {ref}, defined nowhere")
                    env.update({k: str(v) for k, v in pool.get(ref, {}).items()})
        for variable in container.get("env") or []:
            check("value" in variable, f"{where}: {variable['name']} is not a literal value")
            check_setting(where, variable["name"], str(variable.get("value", "")))
            env[variable["name"]] = str(variable.get("value", ""))
        args = container.get("args") or container.get("command") or ["serve"]
        role = args[0]
        roles[name] = role
        check(role in SUBCOMMANDS, f"{where}: unknown subcommand {role}")
        check(container["image"] == "voiced", f"{where}: image {container['image']}, not the name overlays set")
        check("VOICED_DATABASE_URL" in env, f"{where}: no VOICED_DATABASE_URL")
        security = {**pod_security, **(container.get("securityContext") or {})}
        check(security.get("runAsNonRoot") is True, f"{where}: runAsNonRoot is not set")
        check(security.get("runAsUser") == image_uid, f"{where}: runAsUser is not the image's {image_uid}")
        resources_of = container.get("resources") or {}
        memory = {part: resources_of.get(part, {}).get("memory") for part in ("requests", "limits")}
        check(all(memory.values()), f"{where}: memory request and limit {memory}")
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports") or []}
        if "VOICED_METRICS_BIND" in env:
            metrics = port_of(env["VOICED_METRICS_BIND"])
            check(ports.get("metrics") == metrics, f"{where}: port metrics is not VOICED_METRICS_BIND's")
        if role in {"serve", "worker"}:
            grace = float(env.get("VOICED_SHUTDOWN_GRACE_SECS", defaults["shutdown_grace_secs"]))
            stop = float(pod.get("terminationGracePeriodSeconds", 30))
            needed = grace + prestop_seconds(container)
            check(stop > needed, f"{where}: terminationGracePeriodSeconds {stop:g} <= {needed:g} (preStop + grace)")
        if role == "worker":
            redis = env.get("VOICED_REDIS_URL", "")
            check(redis.startswith(("redis://", "rediss://")), f"{where}: worker without Redis")
        if role == "serve":
            bind = port_of(env.get("VOICED_BIND", image_env["VOICED_BIND"]))
            check(env.get("VOICED_WORKERS") == "0", f"{where}: serve runs in-process workers")
            redis = env.get("VOICED_REDIS_URL", "")
            check(redis.startswith(("redis://", "rediss://")), f"{where}: no shared Redis")
            check("VOICED_SIGNING_SECRET" in env, f"{where}: no shared signing secret")
            check(ports.get("http") == bind, f"{where}: port http is not the bind port {bind}")
            probes = {"livenessProbe": "/healthz", "startupProbe": "/healthz", "readinessProbe": "/readyz"}
            for probe, path in probes.items():
                if probe == "startupProbe" and probe not in container:
                    continue
                found = http_probe(container, probe)
                right = found is not None and found[0] == path and found[1] in {"http", bind}
                check(right, f"{where}: {probe} is not GET {path} on the serve port")
            serve_pods.append((workload["spec"]["template"]["metadata"]["labels"], bind))
        if role == "worker":
            check("VOICED_BIND" not in env and "http" not in ports, f"{where}: a worker does not listen")
            check("VOICED_SIGNING_SECRET" in env, f"{where}: no signing secret (webhooks need it)")
            metrics = port_of(env.get("VOICED_METRICS_BIND", ":0"))
            probes = {"livenessProbe": "/healthz", "startupProbe": "/healthz", "readinessProbe": "/readyz"}
            for probe, path in probes.items():
                if probe == "startupProbe" and probe not in container:
                    continue
                found = http_probe(container, probe)
                right = found is not None and found[0] == path and found[1] in {"metrics", metrics}
                check(right, f"{where}: {probe} is not GET {path} on the metrics port")
check({"serve", "worker", "migrate"} <= set(roles.values()), f"kubernetes: workloads {roles}")


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


for name, service in named("Service").items():
    targets = [pod for pod in serve_pods if selects(service["spec"].get("selector") or {}, pod[0])]
    check(bool(targets), f"kubernetes Service {name} selects no serve pods")
    for port in service["spec"]["ports"]:
        right = all(port.get("targetPort") in {"http", bind} for _, bind in targets)
        check(right, f"kubernetes Service {name}: port {port} is not the serve port")
pod_labels = {name: w["spec"]["template"]["metadata"]["labels"] for name, w in named("Deployment").items()}
budgets = named("PodDisruptionBudget")
for name, budget in budgets.items():
    selector = budget["spec"]["selector"].get("matchLabels") or {}
    check(any(selects(selector, labels) for labels in pod_labels.values()), f"kubernetes PDB {name}: no pods")
for name, labels in pod_labels.items():
    covered = any(selects(b["spec"]["selector"].get("matchLabels") or {}, labels) for b in budgets.values())
    check(covered, f"kubernetes Deployment {name}: no PodDisruptionBudget")
telemetry = (ROOT / "src/telemetry.rs").read_text()
for name, hpa in named("HorizontalPodAutoscaler").items():
    target = hpa["spec"]["scaleTargetRef"]["name"]
    check(roles.get(target) == "worker", f"kubernetes HPA {name} scales {target}, not workers")
    for metric in hpa["spec"]["metrics"]:
        source = metric.get(metric["type"][0].lower() + metric["type"][1:]) or {}
        metric_name = source.get("metric", {}).get("name")
        if metric_name:
            check(f'"{metric_name}"' in telemetry, f"kubernetes HPA {name}: voiced exports no {metric_name}")

if errors:
    print("\n".join(f"check-deploy: {e}" for e in errors), file=sys.stderr)
    sys.exit(1)
print(
    f"check-deploy: Dockerfile, compose.yaml ({len(voiced)} voiced services) and deploy/kubernetes"
    f" ({len(resources)} resources, schemas of Kubernetes {' and '.join(KUBERNETES_VERSIONS)}) agree"
    " with config/default.toml"
)
