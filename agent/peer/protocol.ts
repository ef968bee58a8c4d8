import { z } from 'zod';
import { nodeNamePattern } from '../../core/model/names.js';

/**
 * The peer protocol: one question, one answer, both signed (agent/peer/keys.ts). The nonce
 * ties an answer to the question, so an answer can be neither replayed nor kept past its
 * freshness (the asker remembers when it sent each nonce).
 */
const node = z.string().max(253).regex(nodeNamePattern);
const nonce = z.string().regex(/^[A-Za-z0-9_-]{22}$/, 'a 16-byte base64url nonce');
const signature = z.string().max(100);

export const questionSchema = z.strictObject({ from: node, to: node, nonce, signature });
export const answerSchema = z.strictObject({
  node,
  to: node,
  nonce,
  reachesControlPlane: z.boolean(),
  membershipVersion: z.int().min(0),
  signature,
});

export type Question = z.output<typeof questionSchema>;
export type Answer = z.output<typeof answerSchema>;

export const PEER_PATH = '/v1/peer/reach';

export function questionText(q: Pick<Question, 'from' | 'to' | 'nonce'>): string {
  return `cca-peer-question\n${q.from}\n${q.to}\n${q.nonce}`;
}

export function answerText(a: Omit<Answer, 'signature'>): string {
  return `cca-peer-answer\n${a.node}\n${a.to}\n${a.nonce}\n${a.reachesControlPlane ? 1 : 0}\n${a.membershipVersion}`;
}
