package io.kiln.engines.llm.impl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kiln.engines.llm.impl.TestModels.Result;
import io.kiln.pools.TextModels;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** GPT-2's tokenizer, the detokeniser's hold-backs, and the chat template, against the reference. */
class TokenizerTest {

  private static TextTokenizer tokenizer;

  @BeforeAll
  static void load() {
    tokenizer = TextTokenizer.forDecoder(TestModels.tinyGpt().resolve("tokenizer.json"));
  }

  @AfterAll
  static void close() {
    tokenizer.close();
  }

  @Test
  void idsEqualGpt2sOwnTokenizerAndDecodeBack() {
    for (Reference ref : Reference.prompts()) {
      assertThat(tokenizer.encode(ref.text(), true)).as(ref.text()).containsExactly(ref.inputIds());
      assertThat(tokenizer.decode(ref.greedyIds(), 0, ref.greedyIds().length)).isEqualTo(ref.greedyText());
    }
    assertThat(tokenizer.idOf("<|endoftext|>")).hasValue(50256);
  }

  @Test
  void anIncompleteCharacterWaitsForItsLastByte() {
    int[] ids = tokenizer.encode("🙂!", false);
    assertThat(ids.length).isGreaterThan(2); // the emoji's four bytes span tokens
    assertThat(tokenizer.decode(ids, 0, 1)).endsWith("\uFFFD");
    TextStream text = new TextStream(tokenizer, List.of(), new int[0]);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < ids.length - 1; i++) {
      TextStream.Step s = text.add(ids[i]);
      assertThat(s.delta()).doesNotContain("\uFFFD");
      out.append(s.delta());
    }
    assertThat(out.toString()).isEqualTo("🙂");
    assertThat(text.add(ids[ids.length - 1]).delta()).isEqualTo("!");
  }

  @Test
  void textThatMayStartAStopStringWaits() {
    int[] ids = tokenizer.encode("hello world again", false);
    TextStream text = new TextStream(tokenizer, List.of("lo wo"), new int[0]);
    TextStream.Step first = text.add(ids[0]); // "hello": "lo" may start "lo wo"
    assertThat(first.delta()).isEqualTo("hel");
    TextStream.Step second = text.add(ids[1]); // " world": the stop string is complete
    assertThat(second.stopped()).isTrue();
    assertThat(second.delta()).isEmpty();
  }

  @Test
  void finishingReleasesWhatWasHeld() {
    int[] ids = tokenizer.encode("hello", false);
    TextStream text = new TextStream(tokenizer, List.of("lo!"), new int[0]);
    assertThat(text.add(ids[0]).delta()).isEqualTo("hel");
    TextStream.Step end = text.finish();
    assertThat(end.delta()).isEqualTo("lo");
    assertThat(end.stopped()).isFalse();
  }

  @Test
  void theChatTemplateRendersAsTransformersDoes() throws Exception {
    JsonNode chat = TestModels.reference(TestModels.tinyGpt()).path("chat");
    String messages = new ObjectMapper().writeValueAsString(chat.path("messages"));
    ChatTemplate template = ModelFolderHolder.template();
    String rendered = template.render(messages);
    assertThat(rendered).isEqualTo(chat.path("text").asText());
    assertThat(tokenizer.encode(rendered, false)).containsExactly(TestModels.ints(chat.path("input_ids")));
  }

  @Test
  void aChatRequestIsTheRenderedPrompt() throws Exception {
    JsonNode chat = TestModels.reference(TestModels.tinyGpt()).path("chat");
    String messages = new ObjectMapper().writeValueAsString(chat.path("messages"));
    try (DecoderRunner runner = TestModels.decoder(Map.of())) {
      Result viaChat = TestModels.runOne(runner, TestModels.request(messages, TextModels.INPUT_FORMAT,
          TextModels.FORMAT_CHAT, TextModels.TEMPERATURE, 0L, TextModels.MAX_TOKENS, 8L));
      Result viaText = TestModels.runOne(runner, TestModels.request(chat.path("text").asText(),
          TextModels.TEMPERATURE, 0L, TextModels.MAX_TOKENS, 8L));
      assertThat(viaChat.promptTokens()).isEqualTo(chat.path("input_ids").size());
      assertThat(viaChat.tokens()).containsExactly(viaText.tokens());
    }
  }

  @Test
  void templatesMayRefuseAConversationAndSeeTheSpecialTokens() {
    ChatTemplate strict = new ChatTemplate("{% if messages[0]['role'] != 'system' %}"
        + "{{ raise_exception('the first message must be the system prompt') }}{% endif %}"
        + "{{ bos_token }}{% for m in messages %}{{ m['content'].strip() }}{{ eos_token }}{% endfor %}"
        + "{% if add_generation_prompt %}>{% endif %}", "<s>", "</s>");
    assertThat(strict.render("[{\"role\": \"system\", \"content\": \" be brief \"}]"))
        .isEqualTo("<s>be brief</s>>");
    assertThatThrownBy(() -> strict.render("[{\"role\": \"user\", \"content\": \"hi\"}]"))
        .isInstanceOfSatisfying(io.kiln.pools.InferenceException.class, e -> assertThat(e.getMessage())
            .startsWith("text_input: ").contains("the first message must be the system prompt"));
  }

  /** The tiny model's template as the loader builds it. */
  private static final class ModelFolderHolder {
    static ChatTemplate template() {
      ModelFolder folder = ModelFolder.open(TestModels.tinyGpt(), "Decoder");
      return new ChatTemplate(folder.chatTemplate().orElseThrow(), folder.specialToken("bos_token").orElseThrow(),
          folder.specialToken("eos_token").orElseThrow());
    }
  }
}
