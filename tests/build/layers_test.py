#!/usr/bin/env python3
"""The layers, kept by the build: an include that crosses a "never" fails.

The nevers (ARCHITECTURE.md, "Layers"):
  1. llm_client/ and proposers/ never include daemon/;
  2. no file includes the engine (daemon/engine/engine.h) but the CLI
     (daemon/cli/) and the engine's own files and tests (daemon/engine/engine*);
     so the judge, the run ends, the executors, decide/, store/, slurm/,
     serve/ and exec/ never do;
  3. the engine (daemon/engine/) never includes the CLI (daemon/cli/), its
     rendering included;
  4. daemon/util/ includes nothing of the daemon but util/ itself;
  5. trainer/harness/ never includes the editable trainer (train.cu, model/).

Quoted includes are resolved as the compiler does: next to the including
file first, then from the repository root or trainer/ (the include roots).
    layers_test.py ROOT        check the tree at ROOT; exit 1 naming each crossing
    layers_test.py --self-test plant one crossing per never in a scratch tree,
                               and fail unless each is caught
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = ('.h', '.hpp', '.cc', '.cpp', '.cu', '.cuh')
ENGINE_H = 'daemon/engine/engine.h'


def resolve(root, including, name):
    """The repository path an include names, or None for a header outside the tree."""
    here = os.path.dirname(including)
    for base in (here, '', 'trainer'):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate.replace(os.sep, '/')
    return None


def crossings(root):
    found = []
    for top in ('daemon', 'llm_client', 'proposers', 'trainer', 'tests'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, '/')
                with open(os.path.join(root, path), encoding='utf-8', errors='replace') as fh:
                    text = fh.read()
                for name in INCLUDE.findall(text):
                    target = resolve(root, path, name)
                    if target is None:
                        continue
                    why = never(path, target)
                    if why:
                        found.append(f'{path}: includes {target}: {why}')
    return found


def never(path, target):
    if path.startswith(('llm_client/', 'proposers/')) and target.startswith('daemon/'):
        return 'llm_client/ and proposers/ never include daemon/'
    if target == ENGINE_H and not (path.startswith('daemon/cli/') or path.startswith('daemon/engine/engine')):
        return 'only the CLI and the engine itself include the engine'
    if path.startswith('daemon/engine/') and target.startswith('daemon/cli/'):
        return 'the engine never includes the CLI'
    if path.startswith('daemon/util/') and target.startswith('daemon/') and not target.startswith('daemon/util/'):
        return 'util/ depends on nothing of the daemon'
    if path.startswith('trainer/harness/') and (target == 'trainer/train.cu' or target.startswith('trainer/model/')):
        return 'the fixed harness never includes the editable trainer'
    return None


def self_test():
    plants = {
        'llm_client/x.cc': '#include "daemon/config.h"\n',
        'proposers/y.h': '#include "daemon/store/store.h"\n',
        'daemon/engine/judge.cc': '#include "daemon/engine/engine.h"\n',
        'daemon/engine/run_end.cc': '#include "engine.h"\n',  # relative to its own folder
        'daemon/decide/keep_rule.cc': '#include "daemon/engine/engine.h"\n',
        'daemon/engine/engine.cc': '#include "daemon/cli/report.h"\n',
        'daemon/util/text.cc': '#include "daemon/store/store.h"\n',
        'trainer/harness/eval.cc': '#include "model/attention.cuh"\n',
    }
    allowed = {
        'daemon/cli/cli.cc': '#include "daemon/engine/engine.h"\n',
        'daemon/engine/engine_test.cc': '#include "daemon/engine/engine.h"\n',
        'daemon/engine/engine.cc': '#include "daemon/util/text.h"\n#include "daemon/store/store.h"\n',
        'daemon/util/file.cc': '#include "daemon/util/file.h"\n',
        'trainer/harness/loader.cc': '#include "harness/loader.h"\n',
    }
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'a') as fh:
                fh.write(text)
        for target in ('daemon/config.h', 'daemon/store/store.h', ENGINE_H, 'daemon/cli/report.h',
                       'daemon/util/text.h', 'daemon/util/file.h', 'trainer/model/attention.cuh',
                       'trainer/harness/loader.h'):
            write(target, '')
        for path, text in allowed.items():
            write(path, text)
        if crossings(root):
            print('self-test: allowed includes were refused:\n  ' + '\n  '.join(crossings(root)))
            return 1
        for path, text in plants.items():
            write(path, text)
        found = crossings(root)
        missed = [p for p in plants if not any(f.startswith(p + ':') for f in found)]
        if missed:
            print('self-test: crossings not caught in ' + ', '.join(missed))
            return 1
    print(f'self-test: all {len(plants)} planted crossings caught')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = crossings(sys.argv[1])
    for line in found:
        print(line)
    if found:
        print(f'{len(found)} include(s) cross a layer')
        return 1
    print('layers: no include crosses a never')
    return 0


if __name__ == '__main__':
    sys.exit(main())
