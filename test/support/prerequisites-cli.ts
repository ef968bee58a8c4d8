/**
 * `npm test`'s first step (the `pretest` script). On Debian as root it installs the system
 * packages the suite needs (the list in prerequisites.ts); anywhere else it stops before
 * running anything and prints exactly what is missing and how to install it, or how to
 * leave a group out on purpose (CCA_TEST_WITHOUT).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { allGroups, excludedGroups, GROUPS, missing, missingPackages } from './prerequisites.js';

function main(): number {
  let without;
  try {
    without = excludedGroups();
  } catch (e) {
    process.stderr.write(`npm test: ${(e as Error).message}\n`);
    return 1;
  }
  const groups = allGroups().filter((g) => !without.includes(g));
  const pkgs = missingPackages(groups);
  const debianRoot = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get') && existsSync('/etc/debian_version');
  if (pkgs.length > 0 && debianRoot) {
    process.stdout.write(`npm test: installing the system packages the tests need: ${pkgs.join(' ')}\n`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    try {
      execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
      execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env });
    } catch (e) {
      process.stderr.write(`npm test: apt-get install ${pkgs.join(' ')} failed (${(e as Error).message.split('\n')[0]}); install them by hand and run npm test again.\n`);
      return 1;
    }
  }
  const problems = groups.flatMap((g) => {
    const reason = missing(g);
    return reason === undefined ? [] : [`  ${g.padEnd(10)} ${reason}\n  ${''.padEnd(10)} (for ${GROUPS[g].why})`];
  });
  if (problems.length > 0) {
    process.stderr.write(
      `npm test: this machine lacks what some tests need:\n${problems.join('\n')}\n\n` +
        (debianRoot ? '' : 'On Debian as root, `npm test` installs the packages itself.\n') +
        `To run without a group on purpose: CCA_TEST_WITHOUT=${groups.filter((g) => missing(g) !== undefined).join(',')} npm test\n`,
    );
    return 1;
  }
  if (without.length > 0) process.stdout.write(`npm test: left out on purpose (CCA_TEST_WITHOUT): ${without.join(', ')}\n`);
  return 0;
}

process.exitCode = main();
