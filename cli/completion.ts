import type { CommandModule } from './context.js';
import { globalFlags } from './globals.js';
import type { Flags, FlagSpec } from './spec.js';

/** What completion knows of one command, from its spec. */
export interface CompletedCommand {
  name: string;
  summary: string;
  /** Offered for its first argument (verbs, kinds); none: file names. */
  words: readonly string[];
  flags: Flags;
}

export async function completionModel(table: Readonly<Record<string, { summary: string; load(): Promise<CommandModule> }>>): Promise<CompletedCommand[]> {
  const out: CompletedCommand[] = [];
  for (const [name, entry] of Object.entries(table)) {
    const { spec } = await entry.load();
    const words = name === 'help' ? Object.keys(table) : (spec.words ?? []);
    out.push({ name, summary: entry.summary, words, flags: spec.flags });
  }
  return out;
}

const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
const spellings = (flags: Flags) => Object.entries(flags).flatMap(([n, f]) => [`--${n}`, ...(f.short ? [`-${f.short}`] : [])]);
const takesValue = (flags: Flags) => Object.entries(flags).filter(([, f]) => f.type === 'string');
const isPath = (f: FlagSpec) => /FILE|DIR/.test(f.value ?? '');

const valuedSpellings = (flags: Flags) => takesValue(flags).flatMap(([n, f]) => [`--${n}`, ...(f.short ? [`-${f.short}`] : [])]);

/** `--role) COMPREPLY=(…); return ;;` for each flag that takes a value: its choices, file names, or nothing. */
function valueCases(flags: Flags, indent: string): string[] {
  return takesValue(flags).map(([n, f]) => {
    const pattern = [`--${n}`, ...(f.short ? [`-${f.short}`] : [])].join('|');
    const action = f.choices ? `COMPREPLY=($(compgen -W ${q(f.choices.join(' '))} -- "$cur"))` : isPath(f) ? 'COMPREPLY=($(compgen -f -- "$cur"))' : 'COMPREPLY=()';
    return `${indent}${pattern}) ${action}; return ;;`;
  });
}

/**
 * A bash function for `complete -F`: the command is the first word that is neither a flag
 * nor a global flag's value; the word before the cursor may be a flag wanting a value (its
 * choices, file names or nothing); else a flag, or the command's first-argument words, or
 * file names.
 */
export function bashScript(cmds: readonly CompletedCommand[]): string {
  const perCommand = cmds.map((c) => {
    const cases = valueCases(c.flags, '        ');
    const head = `    ${c.name}) flags=${q(spellings(c.flags).join(' '))}; words=${q(c.words.join(' '))}; valued=${q(valuedSpellings(c.flags).join(' '))}`;
    return cases.length > 0 ? `${head}\n      case "$prev" in\n${cases.join('\n')}\n      esac ;;` : `${head} ;;`;
  });
  return `# bash completion for cca, generated from the commands' declarations (cca completion bash).
# Load it with: source <(cca completion bash)
_cca() {
  local cur prev cmd="" at=0 nargs=0 i w flags="" words="" valued=""
  local gvalued=${q(valuedSpellings(globalFlags).join(' '))}
  local globals=${q(spellings(globalFlags).join(' '))}
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev=""
  if (( COMP_CWORD > 0 )); then prev="\${COMP_WORDS[COMP_CWORD-1]}"; fi
  for (( i = 1; i < COMP_CWORD; i++ )); do
    w="\${COMP_WORDS[i]}"
    case " $gvalued " in
      *" $w "*) (( i++ )); continue ;;
    esac
    case "$w" in
      -*) ;;
      *) cmd="$w"; at=$i; break ;;
    esac
  done
  case "$prev" in
${valueCases(globalFlags, '    ').join('\n')}
  esac
  if [[ -z "$cmd" ]]; then
    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$globals" -- "$cur"))
    else COMPREPLY=($(compgen -W ${q(cmds.map((c) => c.name).join(' '))} -- "$cur")); fi
    return
  fi
  case "$cmd" in
${perCommand.join('\n')}
  esac
  for (( i = at + 1; i < COMP_CWORD; i++ )); do
    w="\${COMP_WORDS[i]}"
    case " $gvalued $valued " in
      *" $w "*) (( i++ )); continue ;;
    esac
    case "$w" in
      -*) ;;
      *) (( nargs++ )) ;;
    esac
  done
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags $globals" -- "$cur"))
  elif [[ -n "$words" ]]; then
    if (( nargs == 0 )); then COMPREPLY=($(compgen -W "$words" -- "$cur")); else COMPREPLY=(); fi
  else COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -o default -F _cca cca
`;
}

/** zsh runs the same function through its bash completion layer. */
export function zshScript(cmds: readonly CompletedCommand[]): string {
  return `#compdef cca
# zsh completion for cca (cca completion zsh): zsh's bashcompinit runs the bash function.
# Load it with: source <(cca completion zsh)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashScript(cmds).split('\n').filter((l) => !l.startsWith('#')).join('\n')}`;
}

/** fish: one `complete` line per command, flag and word. */
export function fishScript(cmds: readonly CompletedCommand[]): string {
  const names = cmds.map((c) => c.name).join(' ');
  const flagLine = (cond: string, n: string, f: FlagSpec) =>
    [
      'complete -c cca',
      cond,
      `-l ${n}`,
      f.short ? `-s ${f.short}` : '',
      f.type === 'string' ? (f.choices ? `-x -a ${q(f.choices.join(' '))}` : isPath(f) ? '-r -F' : '-x') : '',
      `-d ${q(f.description)}`,
    ]
      .filter(Boolean)
      .join(' ');
  const lines = [
    '# fish completion for cca, generated from the commands\' declarations (cca completion fish).',
    '# Load it with: cca completion fish | source',
    'complete -c cca -f',
    ...Object.entries(globalFlags).map(([n, f]) => flagLine('', n, f)),
    ...cmds.map((c) => `complete -c cca -n ${q(`not __fish_seen_subcommand_from ${names}`)} -a ${c.name} -d ${q(c.summary)}`),
    ...cmds.flatMap((c) => {
      const cond = `-n ${q(`__fish_seen_subcommand_from ${c.name}`)}`;
      return [...Object.entries(c.flags).map(([n, f]) => flagLine(cond, n, f)), c.words.length > 0 ? `complete -c cca ${cond} -a ${q(c.words.join(' '))}` : `complete -c cca ${cond} -F`];
    }),
  ];
  return `${lines.join('\n')}\n`;
}
