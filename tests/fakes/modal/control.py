"""control.py: the Modal double's control plane, service modal.client.ModalClient.

Auth as Modal's: AuthTokenGet takes the token pair alone and returns a JWT;
every other call needs the pair and that JWT (x-modal-auth-token). Apps,
images, secrets and sandboxes follow Modal's rules as its SDKs and api.proto
show them (ids, defaults, limits, errors): images are the local Docker engine's
(`FROM <tag>` only; the double builds nothing and pulls nothing); a sandbox
is `sandboxio create` with Modal's defaults mapped onto its options, and
SandboxCreate announces the isolation it really gives as initial metadata
`sandboxio-tier: <tier>` (container).
"""
from __future__ import annotations

import http.client
import ipaddress
import os
import re
import socket
import time
import urllib.parse
from typing import Iterator

import grpc

import rpc
from auth import AUD_CLIENT, AUD_ROUTER, AuthError, Credentials
from cli import CHUNK, CliError
from state import (FAILURE, SUCCESS, TERMINATED, App, Exec, Fail, Image, Result, Sandbox, Secret, Store,
                   check_exec_env, new_id)

SERVICE = "modal.client.ModalClient"
BUILDER_VERSION = "2024.10"
DEFAULT_TIMEOUT = 300  # s, Modal's default sandbox lifetime
MAX_TIMEOUT = 86400  # s, Modal's ceiling
DEFAULT_MILLI_CPU = 125  # Modal's default reservation: 0.125 cores
DEFAULT_MEMORY_MB = 128  # and 128 MiB
MAX_WAIT = 55.0  # s, longest a SandboxWait/ImageJoinStreaming/logs call blocks
PAGE = 100  # SandboxList page size
OPEN_NETWORK = ["0.0.0.0/1", "128.0.0.0/1"]  # "open", as two sandboxio allowlist entries
NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IMAGE_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}$")
MAX_TAGS, MAX_TAG_NAME, MAX_TAG_VALUE = 64, 256, 1024
MAX_CIDRS = 256
MAX_SECRET_KEYS, MAX_SECRET_VALUE = 64, 65536
ENTRY_RE = re.compile(r"^(\d{1,15})(?:-\d{1,15})?$")


def engine_has_image(ref: str) -> tuple[bool, str]:
    """Asks the local Docker engine (its unix socket) about an image."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return False, "DOCKER_HOST %s is not a unix socket; the double only asks a local engine" % host[:100]
    path = host[len("unix://"):]

    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(30)
            self.sock.connect(path)

    conn = Conn("localhost")
    try:
        conn.request("GET", "/images/%s/json" % urllib.parse.quote(ref, safe=""))
        resp = conn.getresponse()
        resp.read(1 << 20)
        if resp.status == 200:
            return True, ""
        if resp.status == 404:
            return False, ("image '%s' is not in the local Docker engine (the Modal double neither "
                           "builds nor pulls; build or pull it first)" % ref)
        return False, "Docker engine answered HTTP %d for image '%s'" % (resp.status, ref)
    except OSError as e:
        return False, "cannot ask the Docker engine at %s about image '%s': %s" % (path, ref, e)
    finally:
        conn.close()


def result_pb(api, r: Result):
    return api.GenericResult(status=r.status, exitcode=r.exitcode, exception=r.exception)


def utf8_prefix(data: bytes) -> int:
    """Length of the longest prefix of data not ending inside a UTF-8 character."""
    i, k = len(data), 0
    while i > 0 and k < 3 and data[i - 1] & 0xC0 == 0x80:
        i, k = i - 1, k + 1
    if i == 0:
        return len(data)
    lead = data[i - 1]
    need = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1
    return len(data) if len(data) - (i - 1) >= need else i - 1


class ControlPlane:
    def __init__(self, api, store: Store, creds: Credentials, router_url: str) -> None:
        self.api = api
        self.store = store
        self.creds = creds
        self.router_url = router_url

    def _auth(self, context: grpc.ServicerContext) -> None:
        md = rpc.metadata(context)
        try:
            self.creds.check_pair(md)
            token = md.get("x-modal-auth-token")
            if not token:
                raise AuthError("missing x-modal-auth-token (call AuthTokenGet first)")
            self.creds.verify(token, AUD_CLIENT)
        except AuthError as e:
            raise Fail("UNAUTHENTICATED", str(e)) from None

    def handler(self) -> grpc.GenericRpcHandler:
        a = self.api
        from google.protobuf import empty_pb2
        u, s = rpc.unary, rpc.stream
        methods = {
            "AuthTokenGet": u("AuthTokenGet", a.AuthTokenGetRequest, a.AuthTokenGetResponse, self.auth_token_get),
            "ClientHello": u("ClientHello", empty_pb2.Empty, a.ClientHelloResponse, self.client_hello),
            "EnvironmentGetOrCreate": u("EnvironmentGetOrCreate", a.EnvironmentGetOrCreateRequest,
                                        a.EnvironmentGetOrCreateResponse, self.environment_get_or_create),
            "AppGetOrCreate": u("AppGetOrCreate", a.AppGetOrCreateRequest, a.AppGetOrCreateResponse,
                                self.app_get_or_create),
            "ImageGetOrCreate": u("ImageGetOrCreate", a.ImageGetOrCreateRequest, a.ImageGetOrCreateResponse,
                                  self.image_get_or_create),
            "ImageJoinStreaming": s("ImageJoinStreaming", a.ImageJoinStreamingRequest,
                                    a.ImageJoinStreamingResponse, self.image_join_streaming),
            "SecretGetOrCreate": u("SecretGetOrCreate", a.SecretGetOrCreateRequest, a.SecretGetOrCreateResponse,
                                   self.secret_get_or_create),
            "SandboxCreate": u("SandboxCreate", a.SandboxCreateRequest, a.SandboxCreateResponse,
                               self.sandbox_create),
            "SandboxGetTaskId": u("SandboxGetTaskId", a.SandboxGetTaskIdRequest, a.SandboxGetTaskIdResponse,
                                  self.sandbox_get_task_id),
            "SandboxWait": u("SandboxWait", a.SandboxWaitRequest, a.SandboxWaitResponse, self.sandbox_wait),
            "SandboxTerminate": u("SandboxTerminate", a.SandboxTerminateRequest, a.SandboxTerminateResponse,
                                  self.sandbox_terminate),
            "SandboxList": u("SandboxList", a.SandboxListRequest, a.SandboxListResponse, self.sandbox_list),
            "SandboxTagsSet": u("SandboxTagsSet", a.SandboxTagsSetRequest, empty_pb2.Empty,
                                self.sandbox_tags_set),
            "SandboxTagsGet": u("SandboxTagsGet", a.SandboxTagsGetRequest, a.SandboxTagsGetResponse,
                                self.sandbox_tags_get),
            "SandboxGetFromName": u("SandboxGetFromName", a.SandboxGetFromNameRequest,
                                    a.SandboxGetFromNameResponse, self.sandbox_get_from_name),
            "SandboxGetLogs": s("SandboxGetLogs", a.SandboxGetLogsRequest, a.TaskLogsBatch,
                                self.sandbox_get_logs),
            "TaskGetCommandRouterAccess": u("TaskGetCommandRouterAccess", a.TaskGetCommandRouterAccessRequest,
                                            a.TaskGetCommandRouterAccessResponse,
                                            self.task_get_command_router_access),
        }
        return grpc.method_handlers_generic_handler(SERVICE, methods)

    # ---- auth, hello, environment ----
    def auth_token_get(self, req, context):
        try:
            self.creds.check_pair(rpc.metadata(context))
        except AuthError as e:
            raise Fail("UNAUTHENTICATED", str(e)) from None
        return self.api.AuthTokenGetResponse(token=self.creds.issue(AUD_CLIENT))

    def client_hello(self, req, context):
        self._auth(context)
        return self.api.ClientHelloResponse(image_builder_version=BUILDER_VERSION)

    def environment_get_or_create(self, req, context):
        self._auth(context)
        name = req.deployment_name or "main"
        if not NAME_RE.match(name):
            raise Fail("INVALID_ARGUMENT", "invalid environment name '%s'" % name[:64])
        st = self.store
        with st.cond:
            if name not in st.envs:
                if req.object_creation_type == 0 and name != "main":
                    raise Fail("NOT_FOUND", "Environment '%s' not found" % name)
                st.envs[name] = new_id("en")
            env_id = st.envs[name]
        return self.api.EnvironmentGetOrCreateResponse(
            environment_id=env_id,
            metadata=self.api.EnvironmentMetadata(
                name=name, settings=self.api.EnvironmentSettings(image_builder_version=BUILDER_VERSION)))

    # ---- apps ----
    def app_get_or_create(self, req, context):
        self._auth(context)
        if not NAME_RE.match(req.app_name):
            raise Fail("INVALID_ARGUMENT", "invalid app name '%s': 1 to 64 of A-Z a-z 0-9 . _ -"
                       % req.app_name[:64])
        env = req.environment_name or "main"
        kind = req.object_creation_type
        if kind not in range(0, 6):
            raise Fail("INVALID_ARGUMENT", "unknown object_creation_type %d" % kind)
        st = self.store
        with st.cond:
            app = st.apps.get((env, req.app_name))
            if app is None:
                if kind == 0:
                    raise Fail("NOT_FOUND", "App '%s' not found in environment '%s'" % (req.app_name, env))
                app = App(new_id("ap"), req.app_name, env)
                st.apps[(env, req.app_name)] = app
                st.app_ids[app.id] = app
            elif kind == 2:
                raise Fail("ALREADY_EXISTS", "App '%s' already exists" % req.app_name)
        return self.api.AppGetOrCreateResponse(app_id=app.id)

    # ---- images ----
    def image_get_or_create(self, req, context):
        self._auth(context)
        st = self.store
        if req.app_id and req.app_id not in st.app_ids:
            raise Fail("NOT_FOUND", "App '%s' not found" % req.app_id[:64])
        if req.existing_image_id:
            img = st.images.get(req.existing_image_id)
            if img is None:
                raise Fail("NOT_FOUND", "Could not find image with ID %s" % req.existing_image_id[:64])
            return self._image_resp(img)
        if not req.HasField("image"):
            raise Fail("INVALID_ARGUMENT", "ImageGetOrCreate without an image")
        im = req.image
        cmds = [c.strip() for c in im.dockerfile_commands if c.strip()]
        ref, problem = "", ""
        if len(cmds) != 1 or len(cmds[0].split()) != 2 or cmds[0].split()[0].upper() != "FROM":
            problem = ("the Modal double runs registry images as they are: dockerfile_commands must be "
                       "exactly [\"FROM <tag>\"], got %d command(s)%s" %
                       (len(cmds), (": " + repr(cmds[0][:100])) if cmds else ""))
        elif len(im.base_images) or len(im.context_files) or req.build_function_id or \
                (im.HasField("gpu_config") and (im.gpu_config.count or im.gpu_config.gpu_type)):
            problem = "the Modal double cannot build images (base images, context files, build functions, GPUs)"
        else:
            ref = cmds[0].split()[1]
            if not IMAGE_REF_RE.match(ref):
                problem = "invalid image reference %r" % ref[:100]
        if not problem:
            ok, problem = engine_has_image(ref)
            if ok:
                with st.cond:
                    img_id = st.image_by_ref.get(ref)
                    if img_id is None:
                        img_id = new_id("im")
                        st.image_by_ref[ref] = img_id
                        st.images[img_id] = Image(img_id, ref, Result(SUCCESS))
                    return self._image_resp(st.images[img_id])
        img = Image(new_id("im"), ref, Result(FAILURE, 0, problem))
        with st.cond:
            st.images[img.id] = img
        return self._image_resp(img)

    def _image_resp(self, img: Image):
        return self.api.ImageGetOrCreateResponse(
            image_id=img.id, result=result_pb(self.api, img.result),
            metadata=self.api.ImageMetadata(image_builder_version=BUILDER_VERSION))

    def image_join_streaming(self, req, context) -> Iterator:
        self._auth(context)
        img = self.store.images.get(req.image_id)
        if img is None:
            raise Fail("NOT_FOUND", "Could not find image with ID %s" % req.image_id[:64])
        # Images are ready or failed as soon as they exist: the result at once.
        yield self.api.ImageJoinStreamingResponse(result=result_pb(self.api, img.result), entry_id="1-0",
                                                  eof=True)

    # ---- secrets ----
    def secret_get_or_create(self, req, context):
        self._auth(context)
        st = self.store
        env = req.environment_name or "main"
        kind = req.object_creation_type
        values = dict(req.env_dict)
        if len(values) > MAX_SECRET_KEYS:
            raise Fail("INVALID_ARGUMENT", "a secret holds at most %d keys, got %d" % (MAX_SECRET_KEYS, len(values)))
        for k, v in values.items():
            if not ENV_NAME_RE.match(k) or len(k) > 255:
                raise Fail("INVALID_ARGUMENT", "invalid secret key '%s': [A-Za-z_][A-Za-z0-9_]*" % k[:64])
            if "\0" in v or len(v.encode()) > MAX_SECRET_VALUE:
                raise Fail("INVALID_ARGUMENT", "secret key %s: the value holds a NUL or is over %d bytes"
                           % (k, MAX_SECRET_VALUE))
        if kind in (4, 5):  # anonymous / ephemeral: a new object each time
            if req.deployment_name:
                raise Fail("INVALID_ARGUMENT", "an ephemeral secret has no name")
            sec = Secret(new_id("st"), "", values)
            with st.cond:
                st.secrets[sec.id] = sec
            return self.api.SecretGetOrCreateResponse(secret_id=sec.id)
        if not NAME_RE.match(req.deployment_name):
            raise Fail("INVALID_ARGUMENT", "invalid secret name '%s'" % req.deployment_name[:64])
        key = (env, req.deployment_name)
        with st.cond:
            sid = st.named_secrets.get(key)
            if kind == 0:
                if sid is None:
                    raise Fail("NOT_FOUND", "Secret '%s' not found in environment '%s'" % (req.deployment_name, env))
                missing = [k for k in req.required_keys if k not in st.secrets[sid].env]
                if missing:
                    raise Fail("FAILED_PRECONDITION", "Secret is missing key(s): %s" % ", ".join(missing)[:500])
            elif kind == 2 and sid is not None:
                raise Fail("ALREADY_EXISTS", "Secret '%s' already exists" % req.deployment_name)
            elif sid is None or kind == 3:
                sid = sid or new_id("st")
                st.secrets[sid] = Secret(sid, req.deployment_name, values)
                st.named_secrets[key] = sid
            elif kind != 1:
                raise Fail("INVALID_ARGUMENT", "unknown object_creation_type %d" % kind)
        return self.api.SecretGetOrCreateResponse(secret_id=sid,
                                                  metadata=self.api.SecretMetadata(name=req.deployment_name))

    # ---- sandboxes ----
    def _tags(self, tags) -> dict[str, str]:
        if len(tags) > MAX_TAGS:
            raise Fail("INVALID_ARGUMENT", "at most %d tags, got %d" % (MAX_TAGS, len(tags)))
        out: dict[str, str] = {}
        for t in tags:
            if not t.tag_name or len(t.tag_name) > MAX_TAG_NAME or len(t.tag_value) > MAX_TAG_VALUE:
                raise Fail("INVALID_ARGUMENT", "tag '%s': a name is 1 to %d bytes, a value at most %d"
                           % (t.tag_name[:64], MAX_TAG_NAME, MAX_TAG_VALUE))
            out[t.tag_name] = t.tag_value
        return out

    def _network(self, d) -> list[str]:
        """sandboxio --allow-cidr entries for a Sandbox definition."""
        na = d.network_access if d.HasField("network_access") else None
        kind = na.network_access_type if na is not None else 0
        cidrs = list(na.allowed_cidrs) if na is not None else []
        if na is not None and len(na.allowed_domains):
            raise Fail("UNIMPLEMENTED", "domain allowlists (allowed_domains) are not supported by the Modal double")
        if kind == 0 and d.block_network:
            kind = 2
        ports = d.open_ports.ports if d.HasField("open_ports") else []
        if kind == 2:
            if cidrs:
                raise Fail("INVALID_ARGUMENT", "network_access BLOCKED cannot be combined with allowed_cidrs")
            if len(d.inbound_cidr_allowlist):
                raise Fail("INVALID_ARGUMENT", "inbound_cidr_allowlist cannot be used when the network is blocked")
            if len(ports):
                raise Fail("INVALID_ARGUMENT", "Cannot specify open ports when `block_network` is enabled")
            return []
        if kind in (0, 1):
            if cidrs:
                raise Fail("INVALID_ARGUMENT", "allowed_cidrs needs network_access_type ALLOWLIST")
            return list(OPEN_NETWORK)
        if kind != 3:
            raise Fail("INVALID_ARGUMENT", "unknown network_access_type %d" % kind)
        if len(cidrs) > MAX_CIDRS:
            raise Fail("INVALID_ARGUMENT", "at most %d allowed_cidrs, got %d" % (MAX_CIDRS, len(cidrs)))
        out = []
        for c in cidrs:
            try:
                out.append(str(ipaddress.ip_network(c.strip(), strict=False)))
            except ValueError:
                raise Fail("INVALID_ARGUMENT", "allowed_cidrs entry %r is not a CIDR" % c[:64]) from None
        return out

    def sandbox_create(self, req, context):
        self._auth(context)
        st, d = self.store, req.definition
        if req.app_id not in st.app_ids:
            raise Fail("NOT_FOUND", "App '%s' not found" % req.app_id[:64])
        img = st.images.get(d.image_id)
        if img is None:
            raise Fail("NOT_FOUND", "Could not find image with ID %s" % d.image_id[:64])
        if img.result.status != SUCCESS:
            raise Fail("FAILED_PRECONDITION", "image %s did not build: %s" % (img.id, img.result.exception))
        unsupported = [n for n, v in (("mount_ids", len(d.mount_ids)), ("nfs_mounts", len(d.nfs_mounts)),
                                      ("s3_mounts", len(d.s3_mounts)), ("volume_mounts", len(d.volume_mounts)),
                                      ("cloud_bucket_mounts", len(d.cloud_bucket_mounts)),
                                      ("pty_info", d.pty_info.enabled),
                                      ("open_ports", d.HasField("open_ports") and len(d.open_ports.ports)),
                                      ("resources.gpu_config", d.resources.gpu_config.count or
                                       d.resources.gpu_config.gpu_type),
                                      ("readiness_probe", d.HasField("readiness_probe")),
                                      ("proxy_id", d.HasField("proxy_id") and d.proxy_id),
                                      ("custom_domain", d.custom_domain),
                                      ("enable_snapshot", d.enable_snapshot)) if v]
        network = self._network(d)
        if unsupported:
            raise Fail("UNIMPLEMENTED", "not supported by the Modal double: %s" % ", ".join(unsupported))
        timeout = d.timeout_secs or DEFAULT_TIMEOUT
        if timeout > MAX_TIMEOUT:
            raise Fail("INVALID_ARGUMENT", "timeout_secs %d is above the maximum of %d (24 hours)"
                       % (timeout, MAX_TIMEOUT))
        idle = d.idle_timeout_secs if d.HasField("idle_timeout_secs") else None
        if idle is not None and not 0 < idle <= MAX_TIMEOUT:
            raise Fail("INVALID_ARGUMENT", "idle_timeout_secs %d is not in 1..%d" % (idle, MAX_TIMEOUT))
        r = d.resources
        if r.milli_cpu_max and r.milli_cpu_max < r.milli_cpu:
            raise Fail("INVALID_ARGUMENT", "milli_cpu_max %d is below milli_cpu %d" % (r.milli_cpu_max, r.milli_cpu))
        if r.memory_mb_max and r.memory_mb_max < r.memory_mb:
            raise Fail("INVALID_ARGUMENT", "memory_mb_max %d is below memory_mb %d" % (r.memory_mb_max, r.memory_mb))
        milli = r.milli_cpu_max or r.milli_cpu or DEFAULT_MILLI_CPU
        memory = r.memory_mb_max or r.memory_mb or DEFAULT_MEMORY_MB
        workdir = d.workdir if d.HasField("workdir") else ""
        if workdir and (not workdir.startswith("/") or "\0" in workdir or len(workdir) > 4096):
            raise Fail("INVALID_ARGUMENT", "workdir must be an absolute path, got %r" % workdir[:100])
        name = d.name if d.HasField("name") else ""
        if name and not NAME_RE.match(name):
            raise Fail("INVALID_ARGUMENT", "invalid sandbox name %r" % name[:64])
        for sid in d.secret_ids:
            if sid not in st.secrets:
                raise Fail("NOT_FOUND", "Secret '%s' not found" % sid[:64])
        if len(d.entrypoint_args) and sum(len(a) for a in d.entrypoint_args) > 65536:
            raise Fail("INVALID_ARGUMENT", "entrypoint_args are longer than 65536 bytes")
        tags = self._tags(req.tags)
        sb_env: dict[str, str] = {}
        for sid in d.secret_ids:
            sb_env.update(st.secrets[sid].env)
        check_exec_env(sb_env, "the sandbox's secrets")
        env_vars = dict(d.environment_variables.contents) if d.HasField("environment_variables") else {}
        for k, v in env_vars.items():
            if not ENV_NAME_RE.match(k) or "\0" in v or len(v) > 32768:
                raise Fail("INVALID_ARGUMENT", "environment_variables entry '%s' is not NAME=value" % k[:64])
        if name:
            with st.cond:
                if any(s.name == name and s.app_id == req.app_id and s.result is None for s in st.sandboxes.values()):
                    raise Fail("ALREADY_EXISTS", "a running sandbox named '%s' already exists in the app" % name)

        args = ["--image", img.ref, "--timeout", str(timeout), "--lifetime", str(timeout),
                "--cpus", "%g" % (milli / 1000.0), "--memory", "%dm" % memory]
        if workdir:
            args += ["--workdir", workdir]
        for k, v in env_vars.items():  # plain (non-secret) variables, as Modal's field is
            args += ["--env", "%s=%s" % (k, v)]
        for c in network:
            args += ["--allow-cidr", c]
        st.admit()
        start = time.monotonic()
        try:
            out = st.cli.create(args)
        except CliError as e:
            raise Fail("FAILED_PRECONDITION", str(e)) from None
        sb = Sandbox(id=new_id("sb"), task_id=new_id("ta"), app_id=req.app_id, cli_id=out["sandbox_id"],
                     image_id=img.id, tier=str(out.get("tier") or "container"), created_at=st.created_at(),
                     timeout=timeout, deadline=start + timeout, idle_timeout=idle, tags=tags, name=name,
                     secret_ids=list(d.secret_ids))
        st.add(sb)
        if len(d.entrypoint_args):
            ex = Exec(id="entrypoint", argv=list(d.entrypoint_args), timeout=timeout, workdir=None,
                      env=sb_env, keep_out=True, err_mode="pipe", entrypoint=True)
            sb.entry = ex
            st.launch(sb, ex)
        context.send_initial_metadata((("sandboxio-tier", sb.tier),))
        return self.api.SandboxCreateResponse(sandbox_id=sb.id)

    def sandbox_get_task_id(self, req, context):
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        resp = self.api.SandboxGetTaskIdResponse(task_id=sb.task_id)
        if sb.result is not None:
            resp.task_result.CopyFrom(result_pb(self.api, sb.result))
        return resp

    def _wait_time(self, asked: float, context) -> float:
        t = min(max(0.0, asked), MAX_WAIT)
        left = context.time_remaining()
        return t if left is None else max(0.0, min(t, left - 0.2))

    def sandbox_wait(self, req, context):
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        res = self.store.wait_finished(sb, self._wait_time(req.timeout, context), context.is_active)
        resp = self.api.SandboxWaitResponse()
        if res is not None:  # "not yet" is a response without a result
            resp.result.CopyFrom(result_pb(self.api, res))
        return resp

    def sandbox_terminate(self, req, context):
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        before = self.store.finish(sb, Result(TERMINATED, -1))
        resp = self.api.SandboxTerminateResponse()
        if before is not None:
            resp.existing_result.CopyFrom(result_pb(self.api, before))
        return resp

    def _info(self, sb: Sandbox):
        a = self.api
        info = a.SandboxInfo(id=sb.id, created_at=sb.created_at, app_id=sb.app_id, name=sb.name,
                             image_id=sb.image_id, timeout_secs=sb.timeout,
                             tags=[a.SandboxTag(tag_name=k, tag_value=v) for k, v in sb.tags.items()],
                             task_info=a.TaskInfo(id=sb.task_id, started_at=sb.created_at,
                                                  enqueued_at=sb.created_at, sandbox_id=sb.id,
                                                  finished_at=sb.finished_at))
        if sb.idle_timeout is not None:
            info.idle_timeout_secs = sb.idle_timeout
        if sb.result is not None:
            info.task_info.result.CopyFrom(result_pb(a, sb.result))
        return info

    def sandbox_list(self, req, context):
        self._auth(context)
        want = self._tags(req.tags)
        st = self.store
        with st.cond:
            boxes = [sb for sb in st.sandboxes.values()
                     if (not req.app_id or sb.app_id == req.app_id)
                     and (req.include_finished or sb.result is None)
                     and (req.before_timestamp <= 0 or sb.created_at < req.before_timestamp)
                     and all(sb.tags.get(k) == v for k, v in want.items())]
            boxes.sort(key=lambda sb: sb.created_at, reverse=True)
            infos = [self._info(sb) for sb in boxes[:PAGE]]
        return self.api.SandboxListResponse(sandboxes=infos)

    def sandbox_tags_set(self, req, context):
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        tags = self._tags(req.tags)
        with self.store.cond:
            sb.tags = tags
        from google.protobuf import empty_pb2
        return empty_pb2.Empty()

    def sandbox_tags_get(self, req, context):
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        with self.store.cond:
            tags = [self.api.SandboxTag(tag_name=k, tag_value=v) for k, v in sb.tags.items()]
        return self.api.SandboxTagsGetResponse(tags=tags)

    def sandbox_get_from_name(self, req, context):
        self._auth(context)
        st = self.store
        env = req.environment_name or "main"
        app = st.apps.get((env, req.app_name))
        with st.cond:
            for sb in st.sandboxes.values():
                if app and sb.app_id == app.id and sb.name == req.sandbox_name and sb.result is None:
                    return self.api.SandboxGetFromNameResponse(sandbox_id=sb.id)
        raise Fail("NOT_FOUND", "Sandbox with name '%s' not found in App '%s'" % (req.sandbox_name[:64],
                                                                                 req.app_name[:64]))

    def sandbox_get_logs(self, req, context) -> Iterator:
        """The entrypoint's output (Modal's sandbox stdout/stderr); entry ids
        are "<byte offset>-0"."""
        self._auth(context)
        sb = self.store.sandbox(req.sandbox_id)
        if req.file_descriptor not in (1, 2):
            raise Fail("INVALID_ARGUMENT", "file_descriptor must be STDOUT or STDERR, got %d" % req.file_descriptor)
        m = ENTRY_RE.match(req.last_entry_id or "0")
        if not m:
            raise Fail("INVALID_ARGUMENT", "bad last_entry_id %r" % req.last_entry_id[:40])
        off = int(m.group(1))
        a = self.api
        wait = self._wait_time(req.timeout or MAX_WAIT, context)
        ex = sb.entry
        if ex is None:
            if self.store.wait_finished(sb, wait, context.is_active) is not None:
                yield a.TaskLogsBatch(task_id=sb.task_id, entry_id="%d-0" % off, eof=True)
            return
        ex.launched.wait()
        p = ex.proc
        active = rpc.on_cancel(context, p.cond)
        end = time.monotonic() + wait
        want = off + 1
        while True:
            with p.cond:
                buf = p.out if req.file_descriptor == 1 else p.err
                while len(buf) < want and not p.done and active() and time.monotonic() < end:
                    p.cond.wait(min(1.0, max(0.01, end - time.monotonic())))
                data, done, total = bytes(buf[off:off + CHUNK]), p.done, len(buf)
            final = done and off + len(data) >= total
            n = len(data) if final else utf8_prefix(data)
            if n:
                off += n
                want = off + 1
                yield a.TaskLogsBatch(task_id=sb.task_id, entry_id="%d-0" % off, items=[a.TaskLogs(
                    data=data[:n].decode("utf-8", "replace"), file_descriptor=req.file_descriptor,
                    timestamp=time.time())])
                continue
            if final:
                yield a.TaskLogsBatch(task_id=sb.task_id, entry_id="%d-0" % off, eof=True)
                return
            if not active() or time.monotonic() >= end:
                return
            want = off + len(data) + 1  # an incomplete character: wait for its end

    def task_get_command_router_access(self, req, context):
        self._auth(context)
        sb = self.store.task(req.task_id)
        if sb.result is not None:
            raise Fail("NOT_FOUND", "task %s has finished" % sb.task_id)
        jwt = self.creds.issue(AUD_ROUTER, task_id=sb.task_id)
        return self.api.TaskGetCommandRouterAccessResponse(jwt=jwt, url=self.router_url)

