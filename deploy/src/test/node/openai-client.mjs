// Drives a Kiln node with the official openai npm client, as a user's application would, and prints one JSON
// line of what it saw. Usage: node openai-client.mjs <baseURL> <chat model> <embedding model>
// Exits non-zero (with the client's error) when any call fails: deploy's LlmEndToEndTest judges the figures.
import OpenAI from 'openai';

const [baseURL, chatModel, embeddingModel] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: process.env.KILN_API_KEY || 'none', maxRetries: 0, timeout: 60_000 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id).sort();

const chat = await client.chat.completions.create({
  model: chatModel, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello!' }],
  max_tokens: 12, temperature: 0, seed: 7,
});
out.chat = { text: chat.choices[0].message.content, role: chat.choices[0].message.role,
  finish: chat.choices[0].finish_reason, usage: chat.usage, object: chat.object };

const stream = await client.chat.completions.create({
  model: chatModel, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello!' }],
  max_tokens: 12, temperature: 0, seed: 7, stream: true, stream_options: { include_usage: true },
});
let streamed = '';
let chunks = 0;
let finish = null;
let usage = null;
let role = null;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta?.role) role = c.delta.role;
    if (c.delta?.content) streamed += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.stream = { text: streamed, chunks, finish, usage, role };

const completion = await client.completions.create({ model: chatModel, prompt: 'The quick brown fox', max_tokens: 5,
  temperature: 0 });
out.completion = { text: completion.choices[0].text, finish: completion.choices[0].finish_reason,
  usage: completion.usage };

const emb = await client.embeddings.create({ model: embeddingModel,
  input: ['A man is eating food.', 'A man is eating a piece of bread.', 'The girl is carrying a baby.'] });
const v = emb.data.map((d) => d.embedding);
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
out.embeddings = { count: v.length, dimension: v[0].length, norm: Math.sqrt(dot(v[0], v[0])),
  similar: dot(v[0], v[1]), unrelated: dot(v[0], v[2]), usage: emb.usage };

try {
  await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] });
  out.unknownModel = { status: 200 };
} catch (e) {
  out.unknownModel = { status: e.status, code: e.code, type: e.type };
}
try {
  await client.chat.completions.create({ model: chatModel, messages: [{ role: 'user', content: 'x' }],
    temperature: 7 });
  out.badTemperature = { status: 200 };
} catch (e) {
  out.badTemperature = { status: e.status, param: e.param, type: e.type };
}
console.log(JSON.stringify(out));
