#!/usr/bin/env python3
"""compose.yaml's services on podman, for scripts/container-test.sh.

Debian bookworm's podman-compose (1.0.3) ignores what this file relies on: a network's subnet
and a container's fixed address (nginx, the one trusted proxy), inline `configs` content, and
`depends_on` conditions (service_healthy, service_completed_successfully). This reads the same
compose.yaml and runs its services with plain `podman` commands, in dependency order:

  compose-podman.py up [--host-port 8080:18080]   network, volumes, every service, waiting on
                                                  each condition; replicas as NAME-1, NAME-2
  compose-podman.py stop [SERVICE...]             podman stop (each service's grace period)
  compose-podman.py start SERVICE...              podman start the containers of SERVICEs
  compose-podman.py down                          remove containers, network and volumes
  compose-podman.py ps                            name, service, address
  compose-podman.py check                         parse only, no engine (scripts/check-deploy.sh)

Only what compose.yaml uses is understood: image, command, entrypoint, environment (with `<<`
merges and ${VAR}, ${VAR:-default}, ${VAR:?message}), volumes (named), ports, healthcheck,
depends_on, deploy.replicas, networks.default.ipv4_address, configs (content), stop_grace_period,
restart, and a network's ipam subnet and ip_range. Everything else is refused, so that the file and this reader do not drift apart.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# docker takes the same commands as used here.
ENGINE = os.environ.get("CONTAINER_ENGINE", "podman")
KNOWN = {
    "image", "build", "command", "entrypoint", "environment", "volumes", "ports", "healthcheck",
    "depends_on", "deploy", "networks", "configs", "stop_grace_period", "restart",
}


def podman(*args: str, check: bool = True, capture: bool = False) -> str:
    result = subprocess.run(
        [ENGINE, *args], check=False, text=True,
        stdout=subprocess.PIPE if capture else None,
        # A probe (check=False) that finds nothing says so through its answer, not stderr.
        stderr=subprocess.DEVNULL if not check else None,
    )
    if check and result.returncode != 0:
        raise SystemExit(f"{ENGINE} {' '.join(args[:3])}… failed ({result.returncode})")
    return result.stdout or ""


def exists(kind: str, name: str) -> subprocess.CompletedProcess:
    """`returncode != 0` when absent (`inspect` works for podman and docker alike)."""
    return subprocess.run([ENGINE, kind, "inspect", name], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)


def interpolate(value: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group(1), match.group(2), match.group(3)
        current = os.environ.get(name, "")
        if op == ":?" and not current:
            raise SystemExit(f"compose.yaml: {arg}")
        if op == ":-" and not current:
            return arg or ""
        return current

    return re.sub(r"\$\$|\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, value)


def seconds(duration: str) -> int:
    match = re.fullmatch(r"(\d+)(s|m)?", str(duration))
    if not match:
        raise SystemExit(f"compose.yaml: duration {duration!r}")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


class Compose:
    def __init__(self) -> None:
        self.file = yaml.safe_load((ROOT / "compose.yaml").read_text())
        self.project = self.file.get("name", "voiced")
        self.services: dict[str, dict] = self.file["services"]
        for name, service in self.services.items():
            unknown = set(service) - KNOWN
            if unknown:
                raise SystemExit(f"compose.yaml {name}: not understood here: {sorted(unknown)}")
        self.network = f"{self.project}_default"
        self.state = Path(os.environ.get("VOICED_CTR_WORK", "/tmp")) / "compose"
        self.pool = None

    def address(self, container: str) -> str:
        """The container's address on the project network ("" when absent)."""
        return podman("inspect", "--format",
                      "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                      container, check=False, capture=True).strip()

    def replicas(self, name: str) -> list[str]:
        count = int(self.services[name].get("deploy", {}).get("replicas", 1))
        if count == 1:
            return [f"{self.project}-{name}"]
        return [f"{self.project}-{name}-{n}" for n in range(1, count + 1)]

    def order(self) -> list[str]:
        done: list[str] = []

        def visit(name: str) -> None:
            if name in done:
                return
            for dep in self.services[name].get("depends_on", {}) or {}:
                visit(dep)
            done.append(name)

        for name in self.services:
            visit(name)
        return done

    def up(self, host_ports: dict[str, str]) -> None:
        net = self.file.get("networks", {}).get("default", {})
        ranges = []
        for config in net.get("ipam", {}).get("config", []):
            ranges.append(f"--subnet={config['subnet']}")
            if "ip_range" in config:
                ranges.append(f"--ip-range={config['ip_range']}")
                # podman 4.3 records the range but allocates from the whole subnet (a worker
                # took nginx's address): hand out the range's addresses here instead.
                taken = {self.address(c) for n in self.services for c in self.replicas(n)}
                self.pool = (str(a) for a in ipaddress.ip_network(config["ip_range"]).hosts()
                             if str(a) not in taken)
        if exists("network", self.network).returncode != 0:
            podman("network", "create", *ranges, self.network, capture=True)
        for volume in self.file.get("volumes", {}) or {}:
            name = f"{self.project}_{volume}"
            if exists("volume", name).returncode != 0:
                podman("volume", "create", name, capture=True)
        self.state.mkdir(parents=True, exist_ok=True)
        for name in self.order():
            self.wait_for_dependencies(name)
            for container in self.replicas(name):
                self.run(name, container, host_ports)

    def wait_for_dependencies(self, name: str) -> None:
        depends = self.services[name].get("depends_on") or {}
        if isinstance(depends, list):
            depends = {dep: {} for dep in depends}
        for dep, how in depends.items():
            condition = (how or {}).get("condition", "service_started")
            for container in self.replicas(dep):
                if condition == "service_healthy":
                    self.wait_healthy(dep, container)
                elif condition == "service_completed_successfully":
                    code = podman("wait", container, capture=True).strip()
                    if code != "0":
                        podman("logs", container)
                        raise SystemExit(f"{container} exited with {code}")

    def wait_healthy(self, name: str, container: str) -> None:
        check = self.services[name]["healthcheck"]
        test = check["test"]
        assert test[0] == "CMD", test
        interval = seconds(check.get("interval", "5s"))
        for _ in range(int(check.get("retries", 3)) * 2):
            if subprocess.run([ENGINE, "exec", container, *test[1:]],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(interval)
        podman("logs", "--tail", "30", container)
        raise SystemExit(f"{container} is not healthy")

    def run(self, name: str, container: str, host_ports: dict[str, str]) -> None:
        service = self.services[name]
        if exists("container", container).returncode == 0:
            podman("start", container, capture=True)
            return
        args = ["run", "-d", "--name", container, "--network", self.network,
                "--network-alias", name, "--label", f"com.docker.compose.project={self.project}",
                "--label", f"com.docker.compose.service={name}"]
        address = ((service.get("networks") or {}).get("default") or {}).get("ipv4_address")
        if not address and self.pool is not None:
            address = next(self.pool)
        if address:
            args += ["--ip", address]
        if "stop_grace_period" in service:
            args += ["--stop-timeout", str(seconds(service["stop_grace_period"]))]
        if service.get("restart") not in (None, "no"):
            args += ["--restart", service["restart"]]
        for key, value in (service.get("environment") or {}).items():
            args += ["-e", f"{key}={interpolate(str(value))}"]
        for volume in service.get("volumes") or []:
            source, target = volume.split(":", 1)
            args += ["-v", f"{self.project}_{source}:{target}"]
        for port in service.get("ports") or []:
            host, inner = str(port).split(":")
            args += ["-p", f"127.0.0.1:{host_ports.get(host, host)}:{inner}"]
        for config in service.get("configs") or []:
            content = self.file["configs"][config["source"]]["content"]
            path = self.state / f"config-{config['source']}"
            path.write_text(interpolate(content))
            args += ["-v", f"{path}:{config['target']}:ro,Z"]
        if "entrypoint" in service:
            args += ["--entrypoint", json.dumps(service["entrypoint"])]
        image = service["image"]
        podman(*args, image, *(service.get("command") or []), capture=True)

    def containers(self, names: list[str]) -> list[str]:
        return [c for name in (names or list(self.services)) for c in self.replicas(name)]

    def stop(self, names: list[str]) -> None:
        # Clients first (nginx, serve, worker), the stores last, as `compose stop` does.
        for container in reversed(self.containers(names) if names else
                                  [c for n in self.order() for c in self.replicas(n)]):
            if exists("container", container).returncode == 0:
                podman("stop", container, capture=True)

    def start(self, names: list[str]) -> None:
        for name in [n for n in self.order() if n in names]:
            for container in self.replicas(name):
                podman("start", container, capture=True)

    def down(self) -> None:
        for container in reversed([c for n in self.order() for c in self.replicas(n)]):
            podman("rm", "-f", "-t", "5", container, check=False, capture=True)
        podman("network", "rm", "-f", self.network, check=False, capture=True)
        for volume in self.file.get("volumes", {}) or {}:
            podman("volume", "rm", "-f", f"{self.project}_{volume}", check=False, capture=True)

    def ps(self) -> None:
        for name in self.order():
            for container in self.replicas(name):
                out = podman("inspect", "--format",
                             "{{.State.Status}} {{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                             container, check=False, capture=True).strip()
                print(f"{container} {name} {out or 'absent'}")


def main() -> None:
    compose = Compose()
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    verb, rest = args[0], args[1:]
    if verb == "up":
        ports = {}
        while rest and rest[0] == "--host-port":
            inner, outer = rest[1].split(":")
            ports[inner] = outer
            rest = rest[2:]
        compose.up(ports)
    elif verb == "stop":
        compose.stop(rest)
    elif verb == "start":
        compose.start(rest)
    elif verb == "down":
        compose.down()
    elif verb == "ps":
        compose.ps()
    elif verb == "check":
        order = compose.order()
        for name in order:
            for key in ("environment",):
                for value in (compose.services[name].get(key) or {}).values():
                    if "${" not in str(value):
                        interpolate(str(value))
        print(f"compose-podman: {len(order)} services understood, in order {' '.join(order)}")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
