"""``air agent`` (report this node's GPUs to a Jupyter server) and ``air agent-token``
(mint, list or revoke the per-node tokens agents authenticate with, on the Jupyter host).

Registered in the ``air`` parser (``cli/parser.py``); the agent itself is ``telemetry/agent.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from . import __version__
from .config import AGENT_TOKEN

TOKEN_ENV = AGENT_TOKEN.name
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

AGENT_EPILOG = f"""\
examples:
  air agent-token gpu-node-7                     on the Jupyter host: prints the node's token
  {TOKEN_ENV}=air-agent-… air agent --server http://jupyter-host:8888/ --node gpu-node-7

The token can be given with --token, but {TOKEN_ENV} keeps it out of the process list.
The agent samples only while a GPU Resources panel is open somewhere (or a run on this node holds
it awake); otherwise it sends a small heartbeat each interval and makes no NVML call.
"""


def add_parsers(commands: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """Add ``agent`` and ``agent-token`` to the ``air`` subcommands, their help laid out by
    ``formatter`` (the ``air`` command's)."""
    agent = commands.add_parser(
        "agent",
        help="report this node's GPUs to a Jupyter server (GPU Resources)",
        description="Sample this node's GPUs and host (NVML, psutil) and report to the "
        "jupyter-air server at --server, as node --node. Runs until stopped (Ctrl-C, SIGTERM).",
        epilog=AGENT_EPILOG,
        formatter_class=formatter,
    )
    agent.add_argument("--server", required=True, metavar="URL", help="the Jupyter server's URL")
    agent.add_argument("--token", metavar="T", help=f"the node's agent token (or {TOKEN_ENV})")
    agent.add_argument("--node", metavar="NAME", help="this node's name (default: host name)")
    agent.add_argument(
        "--interval", type=_interval, default=10.0, metavar="S", help="seconds between samples"
    )
    agent.add_argument(
        "--backend",
        choices=("auto", "nvml", "simulated", "none"),
        default="auto",
        help="what reads the GPUs (simulated: fake GPUs for demos)",
    )
    agent.add_argument(
        "--data-dir",
        metavar="DIR",
        help="jupyter-air's data folder on this node, whose gpu-holds/ keep the agent sampling "
        "while a run trains here (default: as the air command finds it)",
    )
    tokens = commands.add_parser(
        "agent-token",
        help="mint (or revoke, list) the token of a node agent",
        description="Print a new token for NODE's agent (replacing its previous one), stored "
        "as a hash in the data folder of the jupyter-air server on this machine.",
        epilog="examples:\n  air agent-token gpu-node-7\n  air agent-token gpu-node-7 --revoke\n"
        "  air agent-token --list",
        formatter_class=formatter,
    )
    tokens.add_argument("node", nargs="?", metavar="NODE", help="the node's name")
    tokens.add_argument("--revoke", action="store_true", help="forget NODE's token")
    tokens.add_argument("--list", action="store_true", help="list the nodes that have one")
    tokens.add_argument("--data-dir", metavar="DIR", help="jupyter-air's data folder")
    tokens.add_argument(
        "--output",
        "-o",
        choices=("table", "json"),
        default="table",
        help="text for people (default) or json for scripts",
    )


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: must be between 0.05 and 3600 seconds")
    return value


def cmd_agent(args: argparse.Namespace) -> int:
    from .config import data_dir
    from .telemetry.agent import AgentRejected, HttpSender, NodeAgent
    from .telemetry.agent_tokens import TokenError, check_node_name
    from .telemetry.backends import create_backend
    from .telemetry.sampler import Sampler, default_node_name
    from .telemetry.sender import accepted_batch_s

    token = args.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        print(f"air agent: no token: pass --token or set {TOKEN_ENV}", file=sys.stderr)
        return EXIT_USAGE
    node = args.node or default_node_name()
    try:
        check_node_name(node)
        backend = create_backend(args.backend)
    except (TokenError, ValueError) as error:
        print(f"air agent: {error}", file=sys.stderr)
        return EXIT_USAGE
    agent = NodeAgent(
        Sampler(backend, node=node),
        HttpSender(args.server, token, batch_s=accepted_batch_s(args.interval)),
        interval_s=args.interval,
        holds_dir=data_dir(args.data_dir),
        version=__version__,
    )
    signal.signal(signal.SIGTERM, lambda *_: agent.halt())
    print(f"air agent: node {node!r} reports to {args.server} every {args.interval:g} s")
    try:
        agent.run_forever()
    except AgentRejected as error:
        print(f"air agent: the server refused this agent: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        agent.stop()
    return EXIT_OK


def cmd_agent_token(args: argparse.Namespace) -> int:
    from .config import data_dir
    from .telemetry.agent_tokens import TokenError, mint_token, revoke_token, token_nodes

    folder = data_dir(args.data_dir)
    as_json = args.output == "json"
    try:
        if args.list:
            nodes = token_nodes(folder)
            for line in [json.dumps({"nodes": nodes})] if as_json else nodes:
                print(line)
            return EXIT_OK
        if not args.node:
            print("air agent-token: name the node (or --list)", file=sys.stderr)
            return EXIT_USAGE
        if args.revoke:
            had = revoke_token(folder, args.node)
            if as_json:
                print(json.dumps({"node": args.node, "revoked": had}))
            else:
                print(f"{args.node}: token revoked" if had else f"{args.node} had no token")
            return EXIT_OK
        token = mint_token(folder, args.node)
        print(json.dumps({"node": args.node, "token": token}) if as_json else token)
    except TokenError as error:
        print(f"air agent-token: {error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


HANDLERS = {"agent": cmd_agent, "agent-token": cmd_agent_token}
