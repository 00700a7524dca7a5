#!/usr/bin/env python3
"""What the schema cannot see in Dockerfile and compose.yaml (scripts/check-deploy.sh runs it).

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
"""

import ipaddress
import re
import sys
import tomllib
from pathlib import Path

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
check(len(secrets) == 1, "compose: serve processes must share one signing secret")

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

if errors:
    print("\n".join(f"check-deploy: {e}" for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"check-deploy: Dockerfile and compose.yaml agree with config/default.toml ({len(voiced)} voiced services)")
