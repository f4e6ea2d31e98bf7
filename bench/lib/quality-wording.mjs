// The natural-language wording the quality benchmark's generator (quality-generator.mjs) plants
// its facts in: task statements, error remarks, path sentences, decisions, locked decisions,
// user constraints, pending tasks and value changes. The generator draws the facts' values
// (names, options, settings) and their check terms; this module only says them.
//
// Two tables:
// - `original`: the wording the benchmark has always used (kept byte-for-byte, so the default
//   generated set does not change);
// - `paraphrase`: the same facts written fresh, the way other people and agents write them
//   (other verbs and sentence shapes, terse lowercase user instructions, lists, plain prose in
//   place of about half of the protocol markers), sharing no stock phrase with `original`. It
//   exists to measure a summarizer on wording it was never tuned on.
//
// Conventions. A template is a function of a context `v` holding the values to say. Some
// contexts carry callbacks that draw from the session's random generator (`v.word()`,
// `v.thought()`); the generator calls the templates in a fixed order, so a table may use them
// freely. Where the generator picks a template from a list of one, it draws nothing (that is
// how the original draws, where it had no choice). Pending-task phrases return `{ task, terms }`:
// the check terms are what the phrase really says. Path sentences return one string (the
// original: the "edited" variant is derived with `edited`) or `[created, edited]`.

const cap = (s) => s[0].toUpperCase() + s.slice(1);

const original = {
  prefix: 'gen',
  // Between a constraint and an ordinary follow-up in the same user message.
  followupJoin: ' ',
  task: {
    symptoms: [
      (v) => `the nightly ${v.word()} export sometimes writes duplicate ${v.word()} rows`,
      (v) => `${v.word()} totals are off by a few cents for some ${v.word()}s`,
      (v) => `the ${v.word()} endpoint times out for large ${v.word()}s`,
      (v) => `retries of the ${v.word()} job create a second ${v.word()}`,
      (v) => `${v.word()} updates are lost when two requests arrive together`,
    ],
    statements: [
      (v) => `We have a bug: ${v.symptom}. Please find the cause and fix it, with tests. ${v.constraint}`,
      (v) => `${cap(v.symptom)} — can you track it down and fix it? ${v.constraint} The relevant code is probably around \`${v.file}\`.`,
      (v) => `Hi! Customers report that ${v.symptom}. I'd like a proper fix plus a test that reproduces it.\n\n${v.constraint}`,
    ],
    goals: [(v) => `[GOAL] Fix: ${v.symptom}`],
  },
  error: {
    runLeads: ['Let me run it.', 'Running it now.', "Let's see what happens when it runs.", 'Checking the current behaviour first.'],
    quoted: [(v) => `It fails with \`${v.error}\`.`, (v) => `Here is the failure: ${v.error}`, (v) => `So the real error is ${v.error}.`],
    plain: ["That's the failure. Let me find where it comes from.", 'There it is. I need to trace where this starts.', 'Reproduced. Now to the cause.'],
  },
  path: {
    purposes: ['the new logic', 'this code', 'the extracted helper', 'the retry handling', 'the mapping code', 'the tests for it'],
    sentences: [
      (v) => `I'll put ${v.purpose} in a new file, \`${v.path}\`.`,
      (v) => `Creating ${v.path} for ${v.purpose}.`,
      (v) => `${v.thought()} I'll add ${v.purpose} as a separate module.`,
      (v) => `Next, ${v.purpose} goes into its own file so it can be tested in isolation.`,
    ],
    created: (said) => said,
    edited: (said) => said.replace(/a new file|its own file|a separate module/, 'the existing module'),
  },
  reasons: ['it is already a dependency', 'it handles per-request timeouts', 'the platform team already runs it in production',
    'it saves a round trip per call', 'it was about three times faster on our payloads', 'it keeps the lockfile smaller',
    'the other one is no longer maintained', 'it type-checks cleanly', 'it needs no extra infrastructure', 'ops already knows how to monitor it'],
  decisions: [
    (v) => `We'll use ${v.x} instead of ${v.y} for ${v.subject} because ${v.reason}.`,
    (v) => `I'm going with ${v.x} rather than ${v.y} for ${v.subject}: ${v.reason}.`,
    (v) => `Decision on ${v.subject}: ${v.x}, not ${v.y}. ${cap(v.reason)}.`,
    (v) => `After comparing the two, ${v.x} fits better than ${v.y} here since ${v.reason}, so ${v.subject} will go through ${v.x}.`,
    (v) => `Switching ${v.subject} from ${v.y} to ${v.x} — ${v.reason}.`,
    (v) => `Let's drop ${v.y} for ${v.subject} and use ${v.x}; ${v.reason}.`,
  ],
  locked: {
    lines: [
      (v) => `[DECISION] Use ${v.x} for ${v.subject} - LOCKED`,
      (v) => `[DECISION] ${cap(v.subject)}: ${v.x} (not ${v.y}) - LOCKED`,
      (v) => `[DECISION] Keep ${v.subject} on ${v.x} - LOCKED`,
    ],
    leads: [() => "This one is settled, so I'm recording it:", () => 'Locking this in so it is not revisited:', (v) => `${cap(v.reason)}, so:`, () => 'Agreed with the constraints above:'],
  },
  constraints: {
    command: [
      (v) => `Please never run \`${v.cmd}\` against ${v.env}, it is shared with other teams.`,
      (v) => `Important: do not run ${v.cmd} on ${v.env} under any circumstances.`,
      (v) => `One rule for this task: ${v.cmd} must never touch ${v.env}.`,
    ],
    signature: [
      (v) => `Don't change the signature of \`${v.fn}\`: three other services import it.`,
      (v) => `\`${v.fn}\` is part of our public API, so its signature must stay exactly as it is.`,
      (v) => `Whatever you do, keep the parameters of ${v.fn} unchanged; the mobile client calls it directly.`,
    ],
    runtime: [
      (v) => `The code must keep working on ${v.runtime} ${v.ver}; some customers still deploy on it.`,
      (v) => `Remember we still support ${v.runtime} ${v.ver}, so no newer syntax or APIs.`,
      (v) => `Hard requirement: stay compatible with ${v.runtime} ${v.ver}.`,
    ],
    secret: [
      (v) => `Never print or log \`${v.env}\`, not even partially.`,
      (v) => `Do not put the value of ${v.env} in any log line or error message.`,
      (v) => `Make sure ${v.env} never ends up in the logs or in exceptions.`,
    ],
    directory: [
      (v) => `Don't touch anything under \`${v.dir}\`, it's generated by the build.`,
      (v) => `Files in ${v.dir} are off limits; they are regenerated nightly.`,
      (v) => `Never edit ${v.dir} by hand.`,
    ],
    flag: [
      (v) => `Any new behaviour must sit behind the \`${v.flag}\` feature flag.`,
      (v) => `All of this has to be gated by ${v.flag}; it must be off by default.`,
      (v) => `Please make sure the change is only active when ${v.flag} is enabled.`,
    ],
  },
  pending: {
    tasks: {
      test: [(v) => ({ task: `add a regression test for \`${v.fn}\``, terms: ['regression test', v.fn] })],
      changelog: [(v) => ({ task: `update CHANGELOG.md for ${v.ticket}`, terms: ['changelog', v.ticket] })],
      backfill: [(v) => ({ task: `backfill the \`${v.col}\` column on staging once the migration lands`, terms: ['backfill', v.col] })],
      review: [(v) => ({ task: `ask ${v.person} to review the ${v.mod} change`, terms: [v.person, v.mod] })],
      flaky: [(v) => ({ task: `rerun the flaky ${v.test} suite on CI`, terms: [v.test, 'flaky'] })],
    },
    agent: [(v) => `Still open: ${v.task}.`, (v) => `Next step after this: ${v.task}.`, (v) => `TODO: ${v.task}.`, (v) => `One thing left before this is done: I need to ${v.task}.`],
    user: [(v) => `Before you finish, please also ${v.task}.`, (v) => `Don't forget to ${v.task}.`, (v) => `Once that works, ${v.task} — we need it for the release.`],
    marker: [(v) => `[NEXT] ${cap(v.task)}`],
  },
  value: {
    first: [
      (v) => `I'll set \`${v.key}\` to ${v.value} for now; the default is too conservative.`,
      (v) => `Setting ${v.key}=${v.value} in ${v.file} so the local run matches staging.`,
      (v) => `${v.key} has no value yet, so I'm putting ${v.value} in ${v.file}.`,
    ],
    asks: [
      (v) => `Change of plan: set ${v.key} to ${v.value}, ops asked for it.`,
      (v) => `Can you make ${v.key} ${v.value} instead? The previous value caused alerts.`,
      (v) => `Let's use ${v.value} for ${v.key} after all.`,
    ],
    acks: [(v) => `Updating ${v.key} to ${v.value}.`, (v) => `Sure, changing it in ${v.file}.`, () => 'Done in a second.'],
    // Evaluated all at once, in order, before one is picked (as the original always did).
    changes: [
      (v) => `With ${v.prev} the run is still unstable, so I'm changing ${v.key} from ${v.prev} to ${v.value}.`,
      (v) => `${cap(v.thought())} Raising ${v.key} to ${v.value}.`,
      (v) => `That value was wrong; ${v.key} should be ${v.value}.`,
    ],
  },
};

const paraphrase = {
  prefix: 'para',
  followupJoin: '\n',
  task: {
    symptoms: [
      (v) => `every few nights the ${v.word()} dump contains doubled ${v.word()} rows`,
      (v) => `a handful of ${v.word()}s come out off by pennies in the ${v.word()} sums`,
      (v) => `big ${v.word()}s make the ${v.word()} API hang until the gateway gives up`,
      (v) => `re-running a ${v.word()} job leaves an extra ${v.word()} behind`,
      (v) => `when two writes race, one ${v.word()} change silently disappears`,
    ],
    statements: [
      (v) => `support escalated this one: ${v.symptom}. can you dig in, fix the root cause and cover it with a test?\n\n${v.constraint}`,
      (v) => `${v.symptom} (again). need a real fix, not a workaround — and a failing-first test for it. my guess is it starts somewhere in ${v.file}\n${v.constraint}`,
      (v) => `Hey, quick one from the on-call channel — ${v.symptom}. Root cause + fix please, test included.\n\n${v.constraint}`,
    ],
    goals: [(v) => `[GOAL] make this stop: ${v.symptom}`, (v) => `What this run is for: ${v.symptom} — find out why and end it.`],
  },
  error: {
    runLeads: ['Reproducing first.', 'Kicking off a run.', 'Quick run to see where we stand.', 'Trying it as is.'],
    quoted: [(v) => `Boom: \`${v.error}\`.`, (v) => `Got it to break — ${v.error}`, (v) => `ok so this is what blows up: ${v.error}`],
    plain: ['Broken as reported; hunting for the origin.', 'Reproduces every time. Digging into why.', 'Yep, red. Where does this start?'],
  },
  path: {
    purposes: ['the backoff code', 'the field mapping', 'the pulled-out function', 'the core of the fix', 'the new checks', 'the spec for it'],
    sentences: [
      (v) => [`New file for ${v.purpose}: \`${v.path}\`.`, `${cap(v.purpose)} lands in \`${v.path}\`, which is already there.`],
      (v) => [`Writing ${v.path} (${v.purpose}).`, `Editing ${v.path} (${v.purpose}).`],
      (v) => {
        const thought = v.thought();
        return [`${thought} Splitting ${v.purpose} out on its own.`, `${thought} Folding ${v.purpose} into what's there.`];
      },
      (v) => [`Moving ${v.purpose} to a standalone file — easier to test alone.`, `Adding ${v.purpose} next to the code that already lives in that file.`],
    ],
    created: (said) => said[0],
    edited: (said) => said[1],
  },
  reasons: ['we already ship it as a dependency', 'timeouts can be set per call out of the box', 'platform has it live in prod today',
    'there is one fewer network hop on every call', 'it benchmarked roughly 3x quicker on our own payloads', 'the lockfile stays leaner',
    'the alternative looks abandoned upstream', 'its types check without any casts', 'nothing extra needs deploying for it', 'ops has dashboards for it already'],
  decisions: [
    (v) => `${v.x} it is for ${v.subject} (${v.reason}); ${v.y} lost.`,
    (v) => `going forward: ${v.x} (not ${v.y}) for ${v.subject}, since ${v.reason}.`,
    (v) => `Ruled out ${v.y}. ${v.x} stays for ${v.subject}; ${v.reason}.`,
    (v) => `Weighed ${v.y} against ${v.x} for ${v.subject}. ${v.x} wins — ${v.reason}.`,
    (v) => `${cap(v.subject)}: ${v.x}, ${v.y} is out (${v.reason}).`,
    (v) => `Not doing ${v.y} for ${v.subject} after all; ${v.x} gets the job because ${v.reason}.`,
  ],
  locked: {
    lines: [
      (v) => `[DECISION] ${v.subject} = ${v.x} (${v.y} ruled out) - LOCKED`,
      (v) => `[DECISION] ${v.x} for ${v.subject}, no revisiting - LOCKED`,
      (v) => `${v.x} for ${v.subject} is frozen: nobody reopens this, and ${v.y} stays off the table.`,
      (v) => `Closed question — ${v.subject} runs on ${v.x} from here on. Not up for another round.`,
    ],
    leads: [() => 'Writing this down as final:', () => 'For the record, binding from now on:', (v) => `${cap(v.reason)} — therefore:`, () => 'Per what you said earlier:'],
  },
  constraints: {
    command: [
      (v) => `pls don't run ${v.cmd} anywhere near ${v.env}, other teams live there`,
      (v) => `ground rules:\n- no \`${v.cmd}\` on ${v.env}, ever\n- ask me before deleting anything`,
      (v) => `${v.env} is shared. keep ${v.cmd} away from it.`,
    ],
    signature: [
      (v) => `hands off ${v.fn}'s signature, three downstream services depend on it`,
      (v) => `the params of ${v.fn} are frozen (the ios app is compiled against them)`,
      (v) => `could you keep \`${v.fn}\` exactly as it's declared? it's public api, thanks`,
    ],
    runtime: [
      (v) => `fyi some customers are stuck on ${v.runtime.toLowerCase()} ${v.ver} so nothing newer than that pls`,
      (v) => `only ever use syntax/apis that already exist in ${v.runtime} ${v.ver}`,
      (v) => `must run on ${v.runtime.toLowerCase()} ${v.ver}. non-negotiable.`,
    ],
    secret: [
      (v) => `${v.env} stays out of logs + exception messages, even masked`,
      (v) => `pls don't log ${v.env}. not a prefix, not a hash, nothing.`,
      (v) => `reminder: ${v.env} is a secret — it must never get echoed anywhere`,
    ],
    directory: [
      (v) => `keep ${v.dir} untouched, the build regenerates it`,
      (v) => `hands off \`${v.dir}\` — a nightly job rewrites it`,
      (v) => `${v.dir} is frozen. no manual edits there pls`,
    ],
    flag: [
      (v) => `everything new goes behind ${v.flag}, default off`,
      (v) => `only ever run the new path when ${v.flag} is switched on`,
      (v) => `could you wrap this in the \`${v.flag}\` toggle? it needs to ship dark`,
    ],
  },
  pending: {
    tasks: {
      test: [
        (v) => ({ task: `lock in the \`${v.fn}\` fix with a regression check`, terms: ['regression', v.fn] }),
        (v) => ({ task: `get a regression case in for ${v.fn}`, terms: ['regression', v.fn] }),
      ],
      changelog: [
        (v) => ({ task: `put a line about ${v.ticket} in the changelog`, terms: ['changelog', v.ticket] }),
        (v) => ({ task: `write the release notes entry for ${v.ticket}`, terms: ['release notes', v.ticket] }),
      ],
      backfill: [
        (v) => ({ task: `kick off the backfill of \`${v.col}\` on staging after the migration is out`, terms: ['backfill', v.col] }),
        (v) => ({ task: `populate ${v.col} for the old staging rows when the schema change is live`, terms: ['populate', v.col] }),
      ],
      review: [
        (v) => ({ task: `get ${v.person} to look over the ${v.mod} diff`, terms: [v.person, v.mod] }),
        (v) => ({ task: `ping ${v.person} for a second pair of eyes on ${v.mod}`, terms: [v.person, v.mod] }),
      ],
      flaky: [
        (v) => ({ task: `re-trigger ${v.test} on CI, it's a known flake`, terms: [v.test, 'flake'] }),
        (v) => ({ task: `give the flaky ${v.test} job another CI run`, terms: [v.test, 'flaky'] }),
      ],
    },
    agent: [(v) => `Parking one item for later: ${v.task}.`, (v) => `Left on my list → ${v.task}.`, (v) => `Not finished yet; I still have to ${v.task}.`, (v) => `Note to self: ${v.task}.`],
    user: [(v) => `pls ${v.task} before wrapping up`, (v) => `oh and ${v.task} too, the release needs it`, (v) => `could you ${v.task} at the end? thanks!`],
    marker: [(v) => `[NEXT] ${cap(v.task)}`, (v) => `After everything else is green I'll ${v.task}.`],
  },
  value: {
    first: [
      (v) => `Giving ${v.key} an explicit ${v.value} in ${v.file}; unset, it falls back to something far too low.`,
      (v) => `${v.file}: ${v.key} → ${v.value}, same as what staging runs with.`,
      (v) => `Pinning \`${v.key}=${v.value}\` for the moment.`,
    ],
    asks: [
      (v) => `hmm, ops wants ${v.key} at ${v.value} now. can you flip it?`,
      (v) => `${v.key} → ${v.value} pls, the old number kept paging people`,
      (v) => `actually go with ${v.value} for ${v.key}`,
    ],
    acks: [(v) => `On it: ${v.key} becomes ${v.value}.`, (v) => `Editing ${v.file} now.`, () => 'Will do.'],
    changes: [
      (v) => `${v.prev} didn't hold up under load — ${v.key} goes to ${v.value}.`,
      (v) => `${cap(v.thought())} ${v.key} now ${v.value}.`,
      (v) => `Wrong number earlier: ${v.key} needs ${v.value}, not ${v.prev}.`,
    ],
  },
};

export const WORDINGS = { original, paraphrase };
