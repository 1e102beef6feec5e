// The fixed part of runscripts/acceptance.py: its imports and the checks. The site's values
// (plan/acceptance.cpp writes them as Python literals) go between the two.
#include "plan/acceptance.h"

namespace sitegen {

std::string_view acceptance_program_imports() {
    // A view: its length is known here, not counted again for every stack.
    static constexpr std::string_view kImports = R"PY(import argparse
import datetime
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
)PY";
    return kImports;
}

std::string_view acceptance_program_body() {
    static constexpr std::string_view kBody = R"PY(BACKENDS = {'nccl': 'nccl', 'rccl': 'nccl', 'oneccl': 'ccl', 'gloo': 'gloo'}
# NCCL's own transports; a network plugin replaces them.
BUILT_IN_NETWORKS = ('Socket', 'IB')


def cpu_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    cpus = sorted(cpus)
    runs, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        runs.append(str(cpus[i]) if i == j else '%d-%d' % (cpus[i], cpus[j]))
        i = j + 1
    return ','.join(runs) or '(none)'


def rank_list(ranks):
    return ','.join(str(r) for r in sorted(ranks))


def parse_args():
    parser = argparse.ArgumentParser(
        description='Acceptance checks of %s on %s: CPU affinity, device visibility, an exact all_reduce and '
                    'its bus bandwidth, the network plugin; one PASS/FAIL verdict.' % (STACK, SITE))
    parser.add_argument('--direct', type=int, metavar='N',
                        help='run N ranks on this node without a scheduler, launched and bound here')
    parser.add_argument('--sizes', default=','.join(str(s) for s in SIZES_MIB),
                        help='all_reduce sizes for the bandwidth, in MiB, comma-separated (default: %(default)s)')
    parser.add_argument('--iterations', type=int, default=5, help='timed all_reduces per size (default: 5)')
    parser.add_argument('--timeout', type=int, default=300,
                        help='seconds a rank waits for the others before it fails (default: 300)')
    args = parser.parse_args()
    try:
        args.sizes = [float(s) for s in args.sizes.split(',') if s]
    except ValueError:
        parser.error('--sizes takes numbers of MiB, e.g. 1,16,64')
    if args.iterations < 1 or args.timeout < 1 or any(s <= 0 for s in args.sizes):
        parser.error('--iterations, --timeout and --sizes must be positive')
    return args


def passthrough(args):
    return ['--sizes', ','.join('%g' % s for s in args.sizes), '--iterations', str(args.iterations),
            '--timeout', str(args.timeout)]


# ---- --direct N: this program as the launcher --------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def narrowed():
    """Whether the rank wrapper narrows VISIBILITY_VAR to the rank's one device (narrow, shared)."""
    return bool(VISIBILITY_VAR) and VISIBILITY in ('narrow', 'shared') and RANK_STARTER == 'launcher'


def sees_all():
    """Whether each rank sees every device of its node and picks its own by LOCAL_RANK."""
    return VISIBILITY == 'all' or RANK_STARTER == 'torchrun'


def device_index(local_rank):
    """The node's device a local rank uses: LOCAL_RANK / RANKS_PER_DEVICE."""
    return local_rank // RANKS_PER_DEVICE


def visible_device(given, index):
    """The rank wrapper's narrowing: entry `index` of the devices the scheduler left visible
    (round robin), or device `index` when it left none; one visible device stays as it is."""
    if not given:
        return str(index)
    entries = given.split(',')
    return entries[index % len(entries)]


def direct(args):
    n = args.direct
    if n < 1:
        sys.exit('acceptance: --direct N needs N >= 1')
    if DEVICES_PER_NODE and n > DEVICES_PER_NODE * RANKS_PER_DEVICE:
        per = 'one per rank' if RANKS_PER_DEVICE == 1 else '%d ranks per device' % RANKS_PER_DEVICE
        sys.exit('acceptance: --direct %d: the site has %d devices per node, %s' % (n, DEVICES_PER_NODE, per))
    workdir = tempfile.mkdtemp(prefix='sitegen-acceptance-')
    verdict = os.path.join(workdir, 'verdict')
    port = str(free_port())
    procs = []
    for rank in range(n):
        env = dict(os.environ)
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR='127.0.0.1', MASTER_PORT=port, SITEGEN_ACCEPTANCE_VERDICT=verdict)
        for name, value in COLLECTIVE_ENV:
            env.setdefault(name, value)
        if narrowed() and DEVICES_PER_NODE:
            env[VISIBILITY_VAR] = visible_device(os.environ.get(VISIBILITY_VAR, ''), device_index(rank))
        if RANK_CORES:
            env['SITEGEN_ACCEPTANCE_BIND'] = ','.join(str(c) for c in RANK_CORES[rank % len(RANK_CORES)])
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + passthrough(args), env=env))
    codes = [p.wait() for p in procs]
    passed = print_verdict(verdict, codes) and all(c == 0 for c in codes)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0 if passed else 1


def print_verdict(verdict, codes):
    """Prints rank 0's verdict, or one saying there is none; True on PASS."""
    try:
        with open(verdict) as f:
            text = f.read()
    except OSError:
        failed = [r for r, c in enumerate(codes) if c != 0]
        text = 'ACCEPTANCE FAIL: %s on %s: no verdict: ranks %s exited with %s\n' % (
            STACK, SITE, rank_list(failed), ','.join(str(codes[r]) for r in failed))
    sys.stdout.write(text)
    sys.stdout.flush()
    return text.startswith('ACCEPTANCE PASS')


# ---- one rank ----------------------------------------------------------------------------

class Rank:
    def __init__(self):
        missing = [v for v in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')
                   if not os.environ.get(v)]
        if missing:
            sys.exit('acceptance: %s not set: submit acceptance.%s, or run python3 %s --direct N'
                     % (', '.join(missing), SCHEDULER_FILE, os.path.basename(__file__)))
        self.rank = int(os.environ['RANK'])
        self.world = int(os.environ['WORLD_SIZE'])
        self.local_rank = int(os.environ['LOCAL_RANK'])
        self.host = socket.gethostname()
        self.checks = []  # (name, ok, detail)
        self.device_id = None
        self.timings = {}

    def check(self, name, ok, detail):
        self.checks.append((name, bool(ok), detail))
        return ok

    def say(self, text):
        # One write per line: the ranks share the terminal or the job's output file.
        sys.stdout.write('rank %d (local %d) on %s: %s\n' % (self.rank, self.local_rank, self.host, text))
        sys.stdout.flush()


def bind_as_launcher(me):
    """--direct: bind to the cores the site's launcher would bind this rank to."""
    cores = os.environ.pop('SITEGEN_ACCEPTANCE_BIND', '')
    if not cores:
        return
    try:
        os.sched_setaffinity(0, [int(c) for c in cores.split(',')])
    except OSError as e:
        me.check('affinity', False, 'cannot bind to cores %s: %s' % (cores, e))


def affinity(me):
    cpus = sorted(os.sched_getaffinity(0))
    if RANK_CORES:
        want = RANK_CORES[me.local_rank % len(RANK_CORES)]
        me.check('affinity', cpus == want, 'cpus %s, the site binds local rank %d to %s'
                 % (cpu_list(cpus), me.local_rank, cpu_list(want)))
    elif RANK_STARTER == 'torchrun':
        me.check('affinity', len(cpus) >= CPUS_PER_TASK, 'cpus %s; torchrun starts the ranks in one task per node, '
                 'whose CPUs they share: at least %d for each (checked below)' % (cpu_list(cpus), CPUS_PER_TASK))
    else:
        me.check('affinity', len(cpus) >= CPUS_PER_TASK, 'cpus %s; the site does not bind ranks: at least %d, '
                 'not shared with other ranks (checked below)' % (cpu_list(cpus), CPUS_PER_TASK))
    return cpus


def devices(me, torch):
    """Checks the rank sees the devices the visibility policy gives it: its one device (narrow,
    shared), or every device of its node with device LOCAL_RANK among them (all, torchrun);
    returns the torch device for the collectives (None when there is none to use)."""
    if not DEVICES_PER_NODE:
        me.check('devices', True, 'none promised (CPU-only site)')
        return torch.device('cpu')
    visible = os.environ.get(VISIBILITY_VAR, '') if VISIBILITY_VAR else ''
    if GPU_VENDOR == 'intel':
        try:
            import intel_extension_for_pytorch  # noqa: F401  (registers torch.xpu)
        except ImportError:
            pass
        runtime = getattr(torch, 'xpu', None)
        kind = 'xpu'
    else:
        runtime = torch.cuda
        kind = 'cuda'
    count = runtime.device_count() if runtime is not None and runtime.is_available() else 0
    shown = '%s=%s' % (VISIBILITY_VAR, visible or '(unset)') if VISIBILITY_VAR else 'no visibility variable'
    want = device_index(me.local_rank)
    if sees_all():
        ok = count == DEVICES_PER_NODE
        promise = 'all %d of its node, device %d for local rank %d' % (DEVICES_PER_NODE, want, me.local_rank)
        index = want
    else:
        ok = (not VISIBILITY_VAR or (visible and ',' not in visible)) and count == 1
        promise = '1 per rank' if RANKS_PER_DEVICE == 1 else \
            '1 per rank, device %d shared by %d ranks' % (want, RANKS_PER_DEVICE)
        index = 0 if count == 1 else me.local_rank % max(count, 1)
    me.check('devices', ok, 'sees %d %s device%s (%s); the site promises %s'
             % (count, kind, '' if count == 1 else 's', shown, promise))
    device = None
    if 0 <= index < count:
        device = torch.device(kind, index)
        if kind == 'cuda':
            torch.cuda.set_device(device)
        try:
            props = runtime.get_device_properties(index)
            uuid = getattr(props, 'uuid', None)
            me.device_id = str(uuid) if uuid else '%s %s:%d %s' % (shown, kind, index, getattr(props, 'name', kind))
        except Exception:  # noqa: BLE001 (any runtime error: identify it by the variable and index)
            me.device_id = '%s %s:%d' % (shown, kind, index)
    if BACKENDS[LIBRARY] == 'gloo':
        return torch.device('cpu')  # gloo reduces host memory, whatever the rank sees
    return device


def synchronize(torch, device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    elif device.type == 'xpu':
        torch.xpu.synchronize(device)


def exact_sum(me, torch, dist, device, group):
    """all_reduce of (rank + 1) * (1 + i % 3) must give world * (world + 1) / 2 * (1 + i % 3)."""
    world = me.world
    for n in (1, 1000003):
        pattern = (torch.arange(n, dtype=torch.int64) % 3 + 1).to(torch.float32)
        t = (pattern * float(me.rank + 1)).to(device)
        dist.all_reduce(t, group=group)
        synchronize(torch, device)
        want = pattern * float(world * (world + 1) // 2)
        wrong = int((t.cpu() != want).sum())
        if not me.check('all_reduce', wrong == 0, '%d float32 values, %d not the exact sum' % (n, wrong)):
            return False
    return True


def bandwidth(me, torch, dist, device, group, args):
    for mib in args.sizes:
        n = max(1, int(mib * 1024 * 1024) // 4)
        t = torch.zeros(n, dtype=torch.float32, device=device)
        for _ in range(2):
            dist.all_reduce(t, group=group)
        synchronize(torch, device)
        if device.type == 'cuda' and group is not None:
            # NCCL/RCCL: name the rank's GPU (torch 2.x warns when the barrier has to guess it).
            dist.barrier(group=group, device_ids=[device.index])
        else:
            dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(args.iterations):
            dist.all_reduce(t, group=group)
        synchronize(torch, device)
        me.timings[mib] = (time.perf_counter() - start) / args.iterations


def nccl_network(logdir):
    """The network NCCL/RCCL picked, from its NCCL_DEBUG=INFO logs ('Using network AWS Libfabric'), and
    up to 5 of its NET/ lines."""
    used, lines = None, []
    for name in sorted(os.listdir(logdir)):
        with open(os.path.join(logdir, name), errors='replace') as f:
            for line in f:
                if 'Using network ' in line:
                    used = line.split('Using network ', 1)[1].strip()
                if 'NET/' in line and len(lines) < 5:
                    lines.append(line.strip())
    return used, lines


def network_check(me, used, lines, multi_node):
    """A named network plugin must carry the traffic; across nodes the socket fallback never does
    (NCCL/RCCL log 'Using network Socket' when no plugin or InfiniBand loads)."""
    if NETWORK_PLUGIN:
        if used is None:
            me.check('network plugin', False, '%s logged no "Using network" line (NCCL_DEBUG=INFO): cannot tell '
                     'whether %s was used' % (LIBRARY, NETWORK_PLUGIN))
        elif used in BUILT_IN_NETWORKS:
            me.check('network plugin', False, '%s used its built-in %s transport, not %s%s'
                     % (LIBRARY, used, NETWORK_PLUGIN, (': ' + lines[0]) if lines else ''))
        else:
            me.check('network plugin', True, '%s uses network %s (%s expected)' % (LIBRARY, used, NETWORK_PLUGIN))
    elif multi_node:
        if used is None:
            me.check('network', False, '%s logged no "Using network" line (NCCL_DEBUG=INFO): cannot tell '
                     'which network carries the traffic between nodes' % LIBRARY)
        elif used == 'Socket':
            me.check('network', False, '%s fell back to TCP sockets (NET/Socket) between nodes, not the high-speed '
                     'network%s' % (LIBRARY, (': ' + lines[0]) if lines else ''))
        else:
            me.check('network', True, '%s uses network %s between nodes' % (LIBRARY, used))


def driver_version(text):
    """The first run of digits and dots with a dot in it, as the module's driver gate reads it:
    '535.104.05' from 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ...'."""
    m = re.search(r'[0-9]+\.[0-9][0-9.]*', text)
    return m.group(0).rstrip('.') if m else None


def older(version, minimum):
    """Number by number, missing trailing numbers 0: '535.104.05' < '535.129.3'."""
    x, y = [int(n) for n in re.findall(r'[0-9]+', version)], [int(n) for n in re.findall(r'[0-9]+', minimum)]
    n = max(len(x), len(y))
    return x + [0] * (n - len(x)) < y + [0] * (n - len(y))


def driver_check(me):
    """The module's driver gate again, on every rank's node: MIN_DRIVER against the GPU driver's
    version file (SITEGEN_DRIVER_VERSION_FILE names another, for tests)."""
    if not MIN_DRIVER or not DRIVER_VERSION_FILE:
        return
    path = os.environ.get('SITEGEN_DRIVER_VERSION_FILE') or DRIVER_VERSION_FILE
    try:
        with open(path, errors='replace') as f:
            found = driver_version(f.read())
    except OSError as e:
        me.say('driver: not checked: %s (%s %s or newer needed)' % (e.strerror or e, DRIVER, MIN_DRIVER))
        return
    if found is None:
        me.check('driver', False, '%s holds no version' % path)
    else:
        me.check('driver', not older(found, MIN_DRIVER), '%s %s (%s); %s or newer needed'
                 % (DRIVER, found, path, MIN_DRIVER))


def busbw_fraction(busbw, hosts):
    """(verdict, line) for the best all_reduce bus bandwidth (GB/s) against the node's network peak,
    NETWORK_LINKS x LINK_GBPS. Only across nodes: on one node the traffic stays on the intra-node
    fabric, which the network peak says nothing about. verdict None: nothing to judge."""
    peak = NETWORK_LINKS * LINK_GBPS / 8.0
    if peak <= 0:
        return None, None
    if hosts < 2:
        return None, ('bus bandwidth %.3f GB/s on 1 node (intra-node): not compared with the network peak '
                      '%.4g GB/s' % (busbw, peak))
    percent = 100.0 * busbw / peak
    line = ('bus bandwidth %.3f GB/s = %.1f%% of the node\'s network peak %.4g GB/s (%d links x %d Gbit/s)'
            % (busbw, percent, peak, NETWORK_LINKS, LINK_GBPS))
    if MIN_BUSBW_PERCENT <= 0:
        return None, line
    return percent >= MIN_BUSBW_PERCENT, line + '; %d%% required' % MIN_BUSBW_PERCENT


def cross_checks(results):
    """Checks that need every rank: ranks of a node share a device only as the site says (none
    share, or the RANKS_PER_DEVICE local ranks of one LOCAL_RANK / RANKS_PER_DEVICE share one,
    and those use the same one), and without a binding in the site, ranks of a node that share
    CPUs need CPUS_PER_TASK each of them."""
    failures = {}
    by_host = {}
    for r in results:
        by_host.setdefault(r['host'], []).append(r)
    for host, ranks in sorted(by_host.items()):
        seen, groups = {}, {}
        for r in ranks:
            if r['device_id'] is not None:
                seen.setdefault(r['device_id'], []).append(r)
                groups.setdefault(device_index(r['local_rank']), []).append(r)
        for dev, sharing in seen.items():
            if len(set(device_index(r['local_rank']) for r in sharing)) > 1:
                names = rank_list(r['rank'] for r in sharing)
                why = 'ranks %s on %s share one device (%s)' % (names, host, dev)
                if RANKS_PER_DEVICE > 1:
                    why += ', which the site gives only to %d local ranks of one LOCAL_RANK / %d' % (
                        RANKS_PER_DEVICE, RANKS_PER_DEVICE)
                for r in sharing:
                    failures.setdefault(r['rank'], []).append(('devices', why))
        for index, group in sorted(groups.items()):
            used = sorted(set(r['device_id'] for r in group))
            if len(used) > 1:
                why = 'ranks %s on %s should share device %d (LOCAL_RANK / %d) but use %s' % (
                    rank_list(r['rank'] for r in group), host, index, RANKS_PER_DEVICE, ' and '.join(used))
                for r in group:
                    failures.setdefault(r['rank'], []).append(('devices', why))
        if RANK_CORES:
            continue
        sets = {}
        for r in ranks:
            sets.setdefault(tuple(r['cpus']), []).append(r['rank'])
        items = sorted(sets.items())
        for i, (cpus, sharing) in enumerate(items):
            if len(cpus) < CPUS_PER_TASK * len(sharing):
                for rank in sharing:
                    failures.setdefault(rank, []).append(
                        ('affinity', 'ranks %s on %s share cpus %s: %d for %d ranks of %d CPUs each'
                         % (rank_list(sharing), host, cpu_list(cpus), len(cpus), len(sharing), CPUS_PER_TASK)))
            for other, other_ranks in items[i + 1:]:
                common = set(cpus) & set(other)
                if common:
                    for rank in sharing + other_ranks:
                        failures.setdefault(rank, []).append(
                            ('affinity', 'ranks %s and %s on %s overlap on cpus %s'
                             % (rank_list(sharing), rank_list(other_ranks), host, cpu_list(common))))
    return failures


def bandwidth_report(timed, args, world, hosts, failing, results):
    """Prints the best bus bandwidth against the network peak; a fraction under the site's minimum
    fails every rank (the measure is the job's). Returns the names of the checks it made."""
    best = 0.0
    for mib in args.sizes:
        seconds = max(t.get(mib, 0.0) for t in timed)
        nbytes = max(1, int(mib * 1024 * 1024) // 4) * 4
        if seconds > 0:
            best = max(best, nbytes / seconds / 1e9 * 2 * (world - 1) / world)
    ok, line = busbw_fraction(best, hosts)
    if line:
        print(line)
    if ok is None:
        return []
    if not ok:
        failing.setdefault('bus bandwidth', set()).update(r['rank'] for r in results)
    return ['bus bandwidth']


def report(results, args, world):
    """Rank 0: the table of checks, the bandwidth and the verdict line."""
    failures = cross_checks(results)
    failing = {}
    for r in results:
        for name, ok, detail in r['checks']:
            if not ok:
                failing.setdefault(name, set()).add(r['rank'])
        for name, _ in failures.get(r['rank'], []):
            failing.setdefault(name, set()).add(r['rank'])
        for name, detail in failures.get(r['rank'], []):
            print('rank %d on %s: %s FAIL: %s' % (r['rank'], r['host'], name, detail))
    timed = [r['timings'] for r in results if r['timings']]
    hosts = len(set(r['host'] for r in results))
    judged = []
    if timed and world == 1:
        # One rank's all_reduce moves no data (NCCL returns at once: 256 MiB "in" 0.02 ms on an H100,
        # 4x its memory bandwidth), so a bandwidth computed from it would be fiction.
        print('all_reduce with 1 rank (%s, float32, %d iterations): no data crosses a link, so no bandwidth '
              'is measured; the time per call:' % (LIBRARY, args.iterations))
        print('%12s %12s' % ('size', 'time'))
        for mib in args.sizes:
            print('%8.4g MiB %9.3f ms' % (mib, timed[0].get(mib, 0.0) * 1e3))
    elif timed:
        print('all_reduce bus bandwidth (%s, %d ranks, float32, %d iterations; busbw = algbw * 2(n-1)/n):'
              % (LIBRARY, world, args.iterations))
        print('%12s %12s %14s %14s' % ('size', 'time', 'algbw', 'busbw'))
        for mib in args.sizes:
            seconds = max(t.get(mib, 0.0) for t in timed)
            nbytes = max(1, int(mib * 1024 * 1024) // 4) * 4
            algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
            print('%8.4g MiB %9.3f ms %9.3f GB/s %9.3f GB/s'
                  % (mib, seconds * 1e3, algbw, algbw * 2 * (world - 1) / world))
        judged = bandwidth_report(timed, args, world, hosts, failing, results)
    where = '%s on %s: %d rank%s on %d node%s' % (STACK, SITE, world, '' if world == 1 else 's',
                                                  hosts, '' if hosts == 1 else 's')
    if not failing:
        names = sorted(set(name for r in results for name, _, _ in r['checks']) | set(judged))
        return 'ACCEPTANCE PASS: %s; %s ok\n' % (where, ', '.join(names))
    ranks = set().union(*failing.values())
    why = '; '.join('%s: ranks %s' % (name, rank_list(rs)) for name, rs in sorted(failing.items()))
    return 'ACCEPTANCE FAIL: %s; failing ranks %s (%s)\n' % (where, rank_list(ranks), why)


def run_rank(args):
    me = Rank()
    bind_as_launcher(me)
    logdir = None
    multi_node = me.world > int(os.environ['LOCAL_WORLD_SIZE'])
    driver_check(me)
    if LIBRARY in ('nccl', 'rccl') and (NETWORK_PLUGIN or multi_node):
        # Before torch loads NCCL: log the network it picks, one file per process.
        logdir = tempfile.mkdtemp(prefix='sitegen-nccl-log-')
        os.environ['NCCL_DEBUG'] = 'INFO'
        os.environ['NCCL_DEBUG_SUBSYS'] = 'INIT,NET'
        os.environ['NCCL_DEBUG_FILE'] = os.path.join(logdir, 'nccl.%h.%p.log')
    cpus = affinity(me)
    import torch
    import torch.distributed as dist
    device = devices(me, torch)
    timeout = datetime.timedelta(seconds=args.timeout)
    # The checks talk over gloo (CPU), so that a rank without its device still reports.
    dist.init_process_group('gloo', init_method='env://', timeout=timeout)
    backend = BACKENDS[LIBRARY]
    ready = [None] * me.world
    dist.all_gather_object(ready, device is not None)
    if not all(ready):
        me.check('all_reduce', False, 'not run: ranks %s have no device'
                 % rank_list(r for r in range(me.world) if not ready[r]))
    else:
        group = None
        if backend != 'gloo':
            if backend == 'ccl':
                import oneccl_bindings_for_pytorch  # noqa: F401  (registers the ccl backend)
            group = dist.new_group(backend=backend, timeout=timeout)
        try:
            if exact_sum(me, torch, dist, device, group):
                bandwidth(me, torch, dist, device, group, args)
        except Exception as e:  # noqa: BLE001 (a collective error is a finding, not a crash)
            me.check('all_reduce', False, '%s: %s' % (type(e).__name__, e))
    if logdir:
        used, lines = nccl_network(logdir)
        network_check(me, used, lines, multi_node)
        shutil.rmtree(logdir, ignore_errors=True)
    for name, ok, detail in me.checks:
        me.say('%s %s: %s' % (name, 'ok' if ok else 'FAIL', detail))
    result = {'rank': me.rank, 'local_rank': me.local_rank, 'host': me.host, 'cpus': cpus, 'device_id': me.device_id,
              'checks': me.checks, 'timings': me.timings}
    results = [None] * me.world
    dist.all_gather_object(results, result)
    verdict = report(results, args, me.world) if me.rank == 0 else None
    box = [verdict]
    dist.broadcast_object_list(box, src=0)
    verdict = box[0]
    if me.rank == 0:
        path = os.environ.get('SITEGEN_ACCEPTANCE_VERDICT')
        if path:
            with open(path, 'w') as f:
                f.write(verdict)
        else:
            sys.stdout.write(verdict)
            sys.stdout.flush()
    dist.destroy_process_group()
    return 0 if verdict.startswith('ACCEPTANCE PASS') else 1


def main():
    args = parse_args()
    if args.direct is not None:
        return direct(args)
    return run_rank(args)


if __name__ == '__main__':
    sys.exit(main())
)PY";
    return kBody;
}

}  // namespace sitegen
