import { goalPanel } from './session-goal';

describe('goalPanel', () => {
  it('shows checkpoints as ✅ 🔄 ⏳, locked decisions with 🔒, constraints and the next step', () => {
    const panel = goalPanel({
      sessionId: 's',
      goal: 'Capture the flag',
      priority: 'high',
      status: 'active',
      checkpoints: [
        { text: 'Recon', status: 'completed' },
        { text: 'Exploit upload', status: 'in-progress' },
        { text: 'Write-up', status: 'pending' },
      ],
      decisions: [
        { text: 'Use curl, not a browser', locked: true },
        { text: 'Try /flag first', locked: false },
      ],
      constraints: ['One command at a time'],
      artifacts: [{ text: 'Created printenv.pl', action: 'created', path: 'printenv.pl' }],
      nextStep: 'Read /flag',
      goalBlock: { text: 'GOAL…', tokens: 212, version: 3 },
    });
    expect(panel.empty).toBe(false);
    expect(panel.meta).toEqual(['Priority: high', 'Status: active']);
    expect(panel.checkpoints.map((c) => `${c.emoji} ${c.text}`)).toEqual(['✅ Recon', '🔄 Exploit upload', '⏳ Write-up']);
    expect(panel.decisions.map((d) => `${d.emoji} ${d.text}`)).toEqual(['🔒 Use curl, not a browser', '🔓 Try /flag first']);
    expect(panel.goalBlock).toBe('Goal block in the context: 212 tokens, frozen in version 3');
    expect(panel.nextStep).toBe('Read /flag');
  });

  it('is empty when nothing was recorded', () => {
    const panel = goalPanel({ sessionId: 's', checkpoints: [], decisions: [], artifacts: [], goalBlock: null });
    expect(panel).toMatchObject({ empty: true, goal: null, goalBlock: null, nextStep: null });
  });
});
